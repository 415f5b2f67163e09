#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runPlanAction}from"../chunks/chunk-222U4AOT.js";import"../chunks/chunk-OWHONWEO.js";import"../chunks/chunk-YYQV6IAS.js";import"../chunks/chunk-RL5H4A7J.js";await runPlanAction();
