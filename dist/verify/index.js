#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-5UD5VAEQ.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-3QOS3DJF.js";import"../chunks/chunk-BXYY5OJN.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-SXAE2IWN.js";import"../chunks/chunk-SAVNDWMH.js";import"../chunks/chunk-S6AQ6LDJ.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("verify");
