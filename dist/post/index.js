#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runPost}from"../chunks/chunk-2AIYEDFX.js";import"../chunks/chunk-LR67QRL4.js";await runPost();
