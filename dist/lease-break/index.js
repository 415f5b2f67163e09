#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-6C2N76U5.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-NEBIZQPE.js";import"../chunks/chunk-TMPHOGUL.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-IBK7VBSN.js";import"../chunks/chunk-7JW42LF2.js";import"../chunks/chunk-NY5N4ARK.js";import"../chunks/chunk-F2XB6SXV.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("lease-break");
