#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-HAEUS77B.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-2SDZCOLV.js";import"../chunks/chunk-VJNBH55C.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-CN3FRXJI.js";import"../chunks/chunk-SOMS3XTI.js";import"../chunks/chunk-6C2EAFSS.js";import"../chunks/chunk-F2XB6SXV.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("reconcile");
