#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-SGTKEB6X.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-NVHHRDUX.js";import"../chunks/chunk-2TYTTVI4.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-PFBUYXWN.js";import"../chunks/chunk-S2EZGO7Y.js";import"../chunks/chunk-QOTAAPIN.js";import"../chunks/chunk-3INGJ75K.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("recover");
