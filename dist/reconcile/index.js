#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-G3TBSU43.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-FAYBNMR5.js";import"../chunks/chunk-PG7XSYI5.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-2TU4WMXS.js";import"../chunks/chunk-DWK3WT3X.js";import"../chunks/chunk-4474DB2J.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("reconcile");
