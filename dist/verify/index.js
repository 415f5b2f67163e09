#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-VQ5OGMDO.js";import"../chunks/chunk-74YRFNRC.js";await runAction("verify");
