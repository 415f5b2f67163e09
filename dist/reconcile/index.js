#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-F3HMNRNA.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-AXE6HEVE.js";import"../chunks/chunk-L2ZODAAQ.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-FPNWBRG5.js";import"../chunks/chunk-HLOBE4HO.js";import"../chunks/chunk-5SIIXWIT.js";import"../chunks/chunk-F2XB6SXV.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("reconcile");
