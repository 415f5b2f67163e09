#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-L33FLAJD.js";import"../chunks/chunk-VWOL7M5U.js";await runAction("verify");
