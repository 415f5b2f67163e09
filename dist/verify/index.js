#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-RK7VTZIM.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-ANKXA4ZZ.js";import"../chunks/chunk-ZX7C6UYS.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-ZV6PMXAO.js";import"../chunks/chunk-D5SZOHW4.js";import"../chunks/chunk-HW6KJZVO.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("verify");
