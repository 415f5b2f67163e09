#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{context,getOctokit}from"./chunk-KT4CT7KR.js";import"./chunk-WHNAJYLB.js";export{context,getOctokit};
