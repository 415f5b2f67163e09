#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runSiteAction}from"./chunk-BO6DLXEZ.js";import"./chunk-43WICQFZ.js";import"./chunk-7LI6WP5F.js";import"./chunk-43AHG2XY.js";import"./chunk-E33ZRYUQ.js";import"./chunk-LBAFWMHS.js";import"./chunk-JLTJPHSJ.js";export{runSiteAction};
