#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-BTYT4MZD.js";import"../chunks/chunk-LMWNSRKE.js";await runAction("reconcile");
