#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-DGLFPWIF.js";import"../chunks/chunk-DA5NH6WK.js";import"../chunks/chunk-SFYTMOEN.js";import"../chunks/chunk-VCML22YB.js";import"../chunks/chunk-OWHONWEO.js";import"../chunks/chunk-6LKIEPK5.js";import"../chunks/chunk-RL5H4A7J.js";await runAction("verify");
