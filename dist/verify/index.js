#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-VMRABSQ5.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-M7GWIQEZ.js";import"../chunks/chunk-LOWEYSMF.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-TFFC34EP.js";import"../chunks/chunk-YWKNBWAY.js";import"../chunks/chunk-S5M23AKC.js";import"../chunks/chunk-F2XB6SXV.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("verify");
