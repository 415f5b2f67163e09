#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-BTQV6JLR.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-KDGP6T3A.js";import"../chunks/chunk-DQ2Y3JSE.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-YN7TKYAB.js";import"../chunks/chunk-63T6PXPV.js";import"../chunks/chunk-CA2OH6LW.js";import"../chunks/chunk-BL25NZUO.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("verify");
