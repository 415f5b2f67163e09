#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{DeploymentRun,deploymentEnd}from"./chunk-V5Y4LJPZ.js";import"./chunk-LZFMISIS.js";import"./chunk-DS7E4AOL.js";import"./chunk-JLTJPHSJ.js";export{DeploymentRun,deploymentEnd};
