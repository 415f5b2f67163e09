#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{actionDeployments,deploymentStep}from"./chunk-4ZR6OSWR.js";import"./chunk-ELAXRTG4.js";import"./chunk-E7Y4JVGF.js";import"./chunk-24TK354A.js";import"./chunk-PULKJBOM.js";import"./chunk-RITRUEON.js";import"./chunk-7YUV376Z.js";import"./chunk-JLTJPHSJ.js";export{actionDeployments,deploymentStep};
