#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{Deployments,deploymentsClient}from"./chunk-NOC5Z6U4.js";import"./chunk-KT4CT7KR.js";import"./chunk-WHNAJYLB.js";export{Deployments,deploymentsClient};
