#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-WL2CSPBF.js";import"../chunks/chunk-6TOINBI4.js";import"../chunks/chunk-NOI34PQT.js";import"../chunks/chunk-J7MAP3AQ.js";import"../chunks/chunk-HXHVAEB4.js";import"../chunks/chunk-ZASXCHGS.js";import"../chunks/chunk-ERH5RYIO.js";import"../chunks/chunk-BRWA3OPJ.js";import"../chunks/chunk-TZSSLUWJ.js";import"../chunks/chunk-XVE2G6PN.js";import"../chunks/chunk-BEHAVKAR.js";import"../chunks/chunk-RL5H4A7J.js";await runAction("lease-break");
