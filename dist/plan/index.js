#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runPlanAction}from"../chunks/chunk-4KZ7GWA7.js";import"../chunks/chunk-ZASXCHGS.js";import"../chunks/chunk-2JJSXODK.js";import"../chunks/chunk-3BXBWGSI.js";import"../chunks/chunk-PV2RECVK.js";import"../chunks/chunk-XVE2G6PN.js";import"../chunks/chunk-BEHAVKAR.js";import"../chunks/chunk-RL5H4A7J.js";await runPlanAction();
