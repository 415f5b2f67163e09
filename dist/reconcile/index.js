#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-PFTI552A.js";import"../chunks/chunk-IEEUC5CP.js";await runAction("reconcile");
