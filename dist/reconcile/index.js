#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-GZFZ6QOR.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-HDCIGKDU.js";import"../chunks/chunk-L4ZOZWMU.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-VIDNHYO2.js";import"../chunks/chunk-AQHLTTYV.js";import"../chunks/chunk-LBHWPAV5.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("reconcile");
