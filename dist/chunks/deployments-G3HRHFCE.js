#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{Deployments,deploymentsClient}from"./chunk-ELAXRTG4.js";import"./chunk-24TK354A.js";import"./chunk-7YUV376Z.js";import"./chunk-JLTJPHSJ.js";export{Deployments,deploymentsClient};
