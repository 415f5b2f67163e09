#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-2EFO4T3P.js";import"../chunks/chunk-H7EBDDZ5.js";await runAction("recover");
