#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-Y5WF7TBQ.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-7E7AJCIL.js";import"../chunks/chunk-UB4OZ4DF.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-FDNOIYVR.js";import"../chunks/chunk-JQVQCXP7.js";import"../chunks/chunk-IIPDD6UR.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("recover");
