#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-ZUN6GL6V.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-BLE4KYRN.js";import"../chunks/chunk-Z4HSPCS5.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-SEYFNQTR.js";import"../chunks/chunk-OTYAZGJC.js";import"../chunks/chunk-FUQ5RBGR.js";import"../chunks/chunk-F2XB6SXV.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("reconcile");
