#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-XTHDJYXL.js";import"../chunks/chunk-DA5NH6WK.js";import"../chunks/chunk-4G6CAZIL.js";import"../chunks/chunk-JYPECWDE.js";import"../chunks/chunk-OWHONWEO.js";import"../chunks/chunk-ENHQCHN2.js";import"../chunks/chunk-RL5H4A7J.js";await runAction("verify");
