#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runPlanAction}from"../chunks/chunk-SJ3L5FSB.js";import"../chunks/chunk-ODEENM3X.js";import"../chunks/chunk-NXBEHBTH.js";import"../chunks/chunk-E33ZRYUQ.js";import"../chunks/chunk-LBAFWMHS.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runPlanAction();
