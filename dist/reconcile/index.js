#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-XK7YAWYR.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-V7QPV6PZ.js";import"../chunks/chunk-N72F5JD3.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-275DZWJG.js";import"../chunks/chunk-UWECJ65K.js";import"../chunks/chunk-LFQ76AYN.js";import"../chunks/chunk-F2XB6SXV.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("reconcile");
