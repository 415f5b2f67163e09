#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-3TFI76YV.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-577XVUGJ.js";import"../chunks/chunk-MRC34QLW.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-U3JPSNNZ.js";import"../chunks/chunk-SOMS3XTI.js";import"../chunks/chunk-6C2EAFSS.js";import"../chunks/chunk-F2XB6SXV.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("recover");
