#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-M3AQA3ZW.js";import"../chunks/chunk-DA5NH6WK.js";import"../chunks/chunk-JJKSLE44.js";import"../chunks/chunk-QZCJJ36L.js";import"../chunks/chunk-OWHONWEO.js";import"../chunks/chunk-RTH5VV6M.js";import"../chunks/chunk-RL5H4A7J.js";await runAction("recover");
