#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{actionDeployments,deploymentStep}from"./chunk-R6EALJIW.js";import"./chunk-NOC5Z6U4.js";import"./chunk-KT4CT7KR.js";import"./chunk-GKXOTNZY.js";import"./chunk-U6O4EEAX.js";import"./chunk-WHNAJYLB.js";export{actionDeployments,deploymentStep};
