#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-HIGY4VV3.js";import"../chunks/chunk-2QHCGHAF.js";await runAction("reconcile");
