#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{DeploymentRun,deploymentEnd}from"./chunk-E7Y4JVGF.js";import"./chunk-PULKJBOM.js";import"./chunk-JLTJPHSJ.js";export{DeploymentRun,deploymentEnd};
