#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-2LQLKBTM.js";import"../chunks/chunk-2TBPYKCY.js";await runAction("lease-break");
