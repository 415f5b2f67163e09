#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-PJOCL3BC.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-K5XNMEPB.js";import"../chunks/chunk-VVUZ7WUN.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-UI6RJ2O4.js";import"../chunks/chunk-7NXQBYGW.js";import"../chunks/chunk-LUHHMCIV.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("recover");
