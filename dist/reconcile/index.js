#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-GEVNPXGA.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-GFGVZD2I.js";import"../chunks/chunk-HUEYV7WC.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-FC4UXYLA.js";import"../chunks/chunk-Z3JLJM3J.js";import"../chunks/chunk-RE74KTDL.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("reconcile");
