#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{actionsJobLookup,currentJob}from"./chunk-66WDMDAE.js";import"./chunk-K4VRCLQF.js";import"./chunk-6FOV7QUV.js";import"./chunk-CCC2Q3CU.js";export{actionsJobLookup,currentJob};
