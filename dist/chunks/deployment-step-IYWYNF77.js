#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{actionDeployments,deploymentStep}from"./chunk-SMHPAKVR.js";import"./chunk-ELAXRTG4.js";import"./chunk-V5Y4LJPZ.js";import"./chunk-24TK354A.js";import"./chunk-7LAZTHDZ.js";import"./chunk-7YUV376Z.js";import"./chunk-LZFMISIS.js";import"./chunk-DS7E4AOL.js";import"./chunk-JLTJPHSJ.js";export{actionDeployments,deploymentStep};
