#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-QRKP4PGP.js";import"../chunks/chunk-6TOINBI4.js";import"../chunks/chunk-LTRXSTX5.js";import"../chunks/chunk-RZOZ3VKA.js";import"../chunks/chunk-ZASXCHGS.js";import"../chunks/chunk-IEQBEFGQ.js";import"../chunks/chunk-B5OWKL3M.js";import"../chunks/chunk-RISNWGCB.js";import"../chunks/chunk-XVE2G6PN.js";import"../chunks/chunk-BEHAVKAR.js";import"../chunks/chunk-RL5H4A7J.js";await runAction("verify");
