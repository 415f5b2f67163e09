#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-HXYMBFFG.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-Q7THDY3P.js";import"../chunks/chunk-KOGBEG3Y.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-WPWTVJOS.js";import"../chunks/chunk-5YQMSM5D.js";import"../chunks/chunk-EHP4MPUZ.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("reconcile");
