#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-STFMZKYG.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-HVX7BK5L.js";import"../chunks/chunk-YPNH45JM.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-AWNIUQGV.js";import"../chunks/chunk-NOGDYAJ3.js";import"../chunks/chunk-IOKNZPVP.js";import"../chunks/chunk-F2XB6SXV.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("recover");
