#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-OQ2ILA7N.js";import"../chunks/chunk-SU6GK62D.js";await runAction("lease-break");
