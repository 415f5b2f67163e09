#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runPlanAction}from"../chunks/chunk-L7ZYLSXV.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-PWM2MVZA.js";import"../chunks/chunk-FNT3ZTJK.js";import"../chunks/chunk-CMGO7DHG.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runPlanAction();
