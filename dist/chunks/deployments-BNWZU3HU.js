#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{Deployments,deploymentsClient}from"./chunk-4TIM34O6.js";import"./chunk-L7XZGDYP.js";import"./chunk-JLTJPHSJ.js";export{Deployments,deploymentsClient};
