#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-A7DSMG5Y.js";import"../chunks/chunk-R6EALJIW.js";import"../chunks/chunk-NOC5Z6U4.js";import"../chunks/chunk-5PAO6U5U.js";import"../chunks/chunk-KT4CT7KR.js";import"../chunks/chunk-OJKOMKVI.js";import"../chunks/chunk-JZKCJVL7.js";import"../chunks/chunk-BFXLF2VI.js";import"../chunks/chunk-GKXOTNZY.js";import"../chunks/chunk-U6O4EEAX.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-WHNAJYLB.js";init_define_NYL_YAML_MODULES();await runAction("verify");
