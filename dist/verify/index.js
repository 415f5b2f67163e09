#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-BZ26SITM.js";import"../chunks/chunk-DA5NH6WK.js";import"../chunks/chunk-B7V3M6XW.js";import"../chunks/chunk-V626P3YS.js";import"../chunks/chunk-OWHONWEO.js";import"../chunks/chunk-TD6OOMTO.js";import"../chunks/chunk-RL5H4A7J.js";await runAction("verify");
