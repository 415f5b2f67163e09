#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runSiteAction}from"./chunk-W4NCD3EE.js";import"./chunk-QW2GGWTR.js";import"./chunk-CU7RJE3P.js";import"./chunk-T24Y6OUC.js";import"./chunk-E33ZRYUQ.js";import"./chunk-LBAFWMHS.js";import"./chunk-JLTJPHSJ.js";export{runSiteAction};
