#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runSiteAction}from"../chunks/chunk-73KB4WKN.js";import"../chunks/chunk-6FGN2S2C.js";import"../chunks/chunk-FLI3BOBY.js";import"../chunks/chunk-4DV5DKFB.js";import"../chunks/chunk-KXRTOHDZ.js";import"../chunks/chunk-N2VYOV3L.js";import"../chunks/chunk-YNYTQULN.js";import"../chunks/chunk-2TV5WAEG.js";import"../chunks/chunk-7LAZTHDZ.js";import"../chunks/chunk-7YUV376Z.js";import"../chunks/chunk-LZFMISIS.js";import"../chunks/chunk-DS7E4AOL.js";import"../chunks/chunk-NQ7DRWSZ.js";import"../chunks/chunk-NEFAFMKQ.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runSiteAction();
