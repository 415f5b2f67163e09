#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-M3B2Q7W5.js";import"../chunks/chunk-6TOINBI4.js";import"../chunks/chunk-B35IXXTX.js";import"../chunks/chunk-OVSF44QS.js";import"../chunks/chunk-4KZ7GWA7.js";import"../chunks/chunk-ZASXCHGS.js";import"../chunks/chunk-2JJSXODK.js";import"../chunks/chunk-3BXBWGSI.js";import"../chunks/chunk-PV2RECVK.js";import"../chunks/chunk-XVE2G6PN.js";import"../chunks/chunk-BEHAVKAR.js";import"../chunks/chunk-RL5H4A7J.js";await runAction("lease-break");
