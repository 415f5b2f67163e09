#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runPlanAction}from"../chunks/chunk-JJO2TSBS.js";import"../chunks/chunk-OWHONWEO.js";import"../chunks/chunk-JMHBY7YU.js";import"../chunks/chunk-RL5H4A7J.js";await runPlanAction();
