#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-E6KYVBSU.js";import"../chunks/chunk-YHEPE5JK.js";await runAction("recover");
