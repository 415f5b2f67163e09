#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-RDHVOHGF.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-BRCV6FUT.js";import"../chunks/chunk-GLGXA6DC.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-NZDS7UTI.js";import"../chunks/chunk-APP2RXCZ.js";import"../chunks/chunk-BY5VK3OP.js";import"../chunks/chunk-3INGJ75K.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("verify");
