#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-BXWMXJGK.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-DMIPGZNJ.js";import"../chunks/chunk-LW2L5MIO.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-U2Y754PO.js";import"../chunks/chunk-CNHWWP66.js";import"../chunks/chunk-2RUA4XUD.js";import"../chunks/chunk-F2XB6SXV.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("lease-break");
