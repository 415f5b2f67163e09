#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-DJJWM2GY.js";import"../chunks/chunk-QWJT3SBA.js";import"../chunks/chunk-JI4RHHTQ.js";import"../chunks/chunk-RL5H4A7J.js";await runAction("recover");
