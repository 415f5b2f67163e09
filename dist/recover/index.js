#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-73WZHDDX.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-HO7CPQYZ.js";import"../chunks/chunk-JZBWUSAI.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-R3HNF2UI.js";import"../chunks/chunk-S7EXAZAX.js";import"../chunks/chunk-JT54ZUAD.js";import"../chunks/chunk-F2XB6SXV.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("recover");
