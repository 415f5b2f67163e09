#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-PMJW2BMN.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-FQUW5KPI.js";import"../chunks/chunk-K6JMDFYL.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-2CVR3472.js";import"../chunks/chunk-V2DB56AQ.js";import"../chunks/chunk-54OU5OH5.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("reconcile");
