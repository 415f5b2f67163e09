#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-XIVL4CV6.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-YTTZCWFD.js";import"../chunks/chunk-33OBDJ36.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-AN5OXGIH.js";import"../chunks/chunk-R4EEIP4N.js";import"../chunks/chunk-3BOQ6MOY.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("verify");
