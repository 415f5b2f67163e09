#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-DXMBCTXO.js";import"../chunks/chunk-QGBPJHD7.js";await runAction("verify");
