#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{actionsJobLookup,currentJob}from"./chunk-6TOINBI4.js";import"./chunk-ZASXCHGS.js";import"./chunk-BEHAVKAR.js";import"./chunk-RL5H4A7J.js";export{actionsJobLookup,currentJob};
