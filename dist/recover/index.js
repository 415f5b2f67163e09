#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-TVGVWBKC.js";import"../chunks/chunk-DYXDD7L7.js";await runAction("recover");
