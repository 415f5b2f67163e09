#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{context,getOctokit}from"./chunk-L7XZGDYP.js";import"./chunk-JLTJPHSJ.js";export{context,getOctokit};
