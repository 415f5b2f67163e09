#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-2L33YI4A.js";import"../chunks/chunk-XBHPUR4H.js";await runAction("verify");
