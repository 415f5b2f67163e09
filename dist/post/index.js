#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runPost}from"../chunks/chunk-L33FLAJD.js";import"../chunks/chunk-VWOL7M5U.js";await runPost();
