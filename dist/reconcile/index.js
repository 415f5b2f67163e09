#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-EPFAHHC5.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-KA35H67H.js";import"../chunks/chunk-3YFE2CK3.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-ZUS5KVXG.js";import"../chunks/chunk-J6FAVFYM.js";import"../chunks/chunk-L2PKGVK7.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("reconcile");
