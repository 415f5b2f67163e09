#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-UZTZPVJM.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-EAU36K2E.js";import"../chunks/chunk-L7ZYLSXV.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-PWM2MVZA.js";import"../chunks/chunk-FNT3ZTJK.js";import"../chunks/chunk-CMGO7DHG.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("reconcile");
