#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runSiteAction}from"../chunks/chunk-Q5YBEL47.js";import"../chunks/chunk-545CLEYT.js";import"../chunks/chunk-VI5SDV4Y.js";import"../chunks/chunk-LH2AN4EJ.js";import"../chunks/chunk-GKXOTNZY.js";import"../chunks/chunk-U6O4EEAX.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-WHNAJYLB.js";init_define_NYL_YAML_MODULES();await runSiteAction();
