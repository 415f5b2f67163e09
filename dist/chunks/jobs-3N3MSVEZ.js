#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{actionsJobLookup,currentJob}from"./chunk-DA5NH6WK.js";import"./chunk-OWHONWEO.js";import"./chunk-RL5H4A7J.js";export{actionsJobLookup,currentJob};
