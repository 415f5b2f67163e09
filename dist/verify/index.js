#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-QKA2KHJZ.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-QSHI6UIN.js";import"../chunks/chunk-UYFEBDFB.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-YW7FDL3B.js";import"../chunks/chunk-XDU7NY7D.js";import"../chunks/chunk-VC6IPLT4.js";import"../chunks/chunk-F2XB6SXV.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("verify");
