#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-RRNYOJ2A.js";import"../chunks/chunk-4LXIQV3X.js";import"../chunks/chunk-QW2GGWTR.js";import"../chunks/chunk-CU7RJE3P.js";import"../chunks/chunk-T24Y6OUC.js";import"../chunks/chunk-E33ZRYUQ.js";import"../chunks/chunk-LBAFWMHS.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("recover");
