#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runSiteAction}from"./chunk-W3RPHH63.js";import"./chunk-DJXJYSSY.js";import"./chunk-KYJAHFLY.js";import"./chunk-4DV5DKFB.js";import"./chunk-KXRTOHDZ.js";import"./chunk-QTXVC7JI.js";import"./chunk-X3ZV4ZEW.js";import"./chunk-2TV5WAEG.js";import"./chunk-7LAZTHDZ.js";import"./chunk-7YUV376Z.js";import"./chunk-LZFMISIS.js";import"./chunk-DS7E4AOL.js";import"./chunk-NQ7DRWSZ.js";import"./chunk-NEFAFMKQ.js";import"./chunk-JLTJPHSJ.js";export{runSiteAction};
