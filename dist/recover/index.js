#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-CHR34HLM.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-3HLWYIYO.js";import"../chunks/chunk-QEOM6ZVN.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-AJISAXFV.js";import"../chunks/chunk-XCNACX37.js";import"../chunks/chunk-PVEFBKY4.js";import"../chunks/chunk-KY6CST7K.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("recover");
