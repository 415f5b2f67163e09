#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-BFBLSM4O.js";import"../chunks/chunk-AB7S5B7G.js";await runAction("verify");
