#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runPlanAction}from"../chunks/chunk-DN7IO3JE.js";import"../chunks/chunk-7LI6WP5F.js";import"../chunks/chunk-43AHG2XY.js";import"../chunks/chunk-E33ZRYUQ.js";import"../chunks/chunk-LBAFWMHS.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runPlanAction();
