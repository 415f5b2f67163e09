#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-UF6V5WAN.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-O2Y4IKTR.js";import"../chunks/chunk-OPOVDXWZ.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-CUIZE2HX.js";import"../chunks/chunk-YWKNBWAY.js";import"../chunks/chunk-S5M23AKC.js";import"../chunks/chunk-F2XB6SXV.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("lease-break");
