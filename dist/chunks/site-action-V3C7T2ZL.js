#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runSiteAction}from"./chunk-R43PORMB.js";import"./chunk-IOMPBGAY.js";import"./chunk-ODEENM3X.js";import"./chunk-NXBEHBTH.js";import"./chunk-E33ZRYUQ.js";import"./chunk-LBAFWMHS.js";import"./chunk-JLTJPHSJ.js";export{runSiteAction};
