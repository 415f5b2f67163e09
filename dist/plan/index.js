#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runPlanAction}from"../chunks/chunk-DA45NYRZ.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-X34YY3LR.js";import"../chunks/chunk-RUY33CCB.js";import"../chunks/chunk-ICOBW55W.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runPlanAction();
