#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runSiteAction}from"./chunk-Q5YBEL47.js";import"./chunk-545CLEYT.js";import"./chunk-VI5SDV4Y.js";import"./chunk-LH2AN4EJ.js";import"./chunk-GKXOTNZY.js";import"./chunk-U6O4EEAX.js";import"./chunk-WHNAJYLB.js";export{runSiteAction};
