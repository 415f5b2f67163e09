#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runPlanAction}from"../chunks/chunk-BTUJ4IKV.js";import"../chunks/chunk-KT4CT7KR.js";import"../chunks/chunk-VI5SDV4Y.js";import"../chunks/chunk-LH2AN4EJ.js";import"../chunks/chunk-GKXOTNZY.js";import"../chunks/chunk-U6O4EEAX.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-WHNAJYLB.js";init_define_NYL_YAML_MODULES();await runPlanAction();
