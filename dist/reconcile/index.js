#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-3MJZVUAN.js";import"../chunks/chunk-6TOINBI4.js";import"../chunks/chunk-7P3DCVOW.js";import"../chunks/chunk-W35UENKG.js";import"../chunks/chunk-ZASXCHGS.js";import"../chunks/chunk-K3VASFI2.js";import"../chunks/chunk-YO4SVY3J.js";import"../chunks/chunk-FH4EPK5J.js";import"../chunks/chunk-XVE2G6PN.js";import"../chunks/chunk-BEHAVKAR.js";import"../chunks/chunk-RL5H4A7J.js";await runAction("reconcile");
