#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runSiteAction}from"./chunk-73KB4WKN.js";import"./chunk-6FGN2S2C.js";import"./chunk-FLI3BOBY.js";import"./chunk-4DV5DKFB.js";import"./chunk-KXRTOHDZ.js";import"./chunk-N2VYOV3L.js";import"./chunk-YNYTQULN.js";import"./chunk-2TV5WAEG.js";import"./chunk-7LAZTHDZ.js";import"./chunk-7YUV376Z.js";import"./chunk-LZFMISIS.js";import"./chunk-DS7E4AOL.js";import"./chunk-NQ7DRWSZ.js";import"./chunk-NEFAFMKQ.js";import"./chunk-JLTJPHSJ.js";export{runSiteAction};
