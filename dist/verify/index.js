#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-OKQTPKCJ.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-G6BAF6GU.js";import"../chunks/chunk-6L2FBPQA.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-MEOBE5T6.js";import"../chunks/chunk-PP7EXGIZ.js";import"../chunks/chunk-TS5PMBZ3.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("verify");
