#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-Y4R3FUV5.js";import"../chunks/chunk-XKNLMXGB.js";await runAction("verify");
