#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{actionsJobLookup,currentJob}from"./chunk-7VICHNX4.js";import"./chunk-YRSMUMWU.js";import"./chunk-EV3DVTRL.js";import"./chunk-JLTJPHSJ.js";export{actionsJobLookup,currentJob};
