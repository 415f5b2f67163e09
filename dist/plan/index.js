#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runPlanAction}from"../chunks/chunk-XMWKOCLE.js";import"../chunks/chunk-ZQMQYYTN.js";import"../chunks/chunk-24TK354A.js";import"../chunks/chunk-JNXZDG2A.js";import"../chunks/chunk-SQPIA5FC.js";import"../chunks/chunk-PULKJBOM.js";import"../chunks/chunk-3INGJ75K.js";import"../chunks/chunk-RITRUEON.js";import"../chunks/chunk-7YUV376Z.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runPlanAction();
