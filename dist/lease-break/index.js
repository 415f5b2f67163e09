#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-JJN5FOAX.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-RTHO2ATJ.js";import"../chunks/chunk-MUEOC6MK.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-QFCOVX7I.js";import"../chunks/chunk-OXUB5TMI.js";import"../chunks/chunk-XTTMZWYY.js";import"../chunks/chunk-ILV667NV.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("lease-break");
