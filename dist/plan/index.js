#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runPlanAction}from"../chunks/chunk-SYPMYOI3.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-F2X3GGH5.js";import"../chunks/chunk-BGXIZMJF.js";import"../chunks/chunk-LODGUH26.js";import"../chunks/chunk-F2XB6SXV.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runPlanAction();
