#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runPlanAction}from"../chunks/chunk-A7RNCNJQ.js";import"../chunks/chunk-NYPB5RZI.js";import"../chunks/chunk-24TK354A.js";import"../chunks/chunk-4DV5DKFB.js";import"../chunks/chunk-KXRTOHDZ.js";import"../chunks/chunk-QTXVC7JI.js";import"../chunks/chunk-X3ZV4ZEW.js";import"../chunks/chunk-2TV5WAEG.js";import"../chunks/chunk-7LAZTHDZ.js";import"../chunks/chunk-7YUV376Z.js";import"../chunks/chunk-LZFMISIS.js";import"../chunks/chunk-DS7E4AOL.js";import"../chunks/chunk-NQ7DRWSZ.js";import"../chunks/chunk-NEFAFMKQ.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runPlanAction();
