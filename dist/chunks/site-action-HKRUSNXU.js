#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runSiteAction}from"./chunk-K3BNVOR3.js";import"./chunk-OJKOMKVI.js";import"./chunk-JZKCJVL7.js";import"./chunk-BFXLF2VI.js";import"./chunk-GKXOTNZY.js";import"./chunk-U6O4EEAX.js";import"./chunk-WHNAJYLB.js";export{runSiteAction};
