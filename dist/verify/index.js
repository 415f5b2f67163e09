#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-WOQCYJYB.js";import"../chunks/chunk-6DZVKTDS.js";await runAction("verify");
