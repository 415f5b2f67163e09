#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-G6TYULYR.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-ZSTE4EFT.js";import"../chunks/chunk-SIJPRFAE.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-FDNOIYVR.js";import"../chunks/chunk-LTBKUMGX.js";import"../chunks/chunk-IIPDD6UR.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("lease-break");
