#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-NUQMPVC6.js";import"../chunks/chunk-K3QBR2DQ.js";import"../chunks/chunk-JI4RHHTQ.js";import"../chunks/chunk-RL5H4A7J.js";await runAction("verify");
