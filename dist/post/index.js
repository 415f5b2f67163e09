#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runPost}from"../chunks/chunk-BFBLSM4O.js";import"../chunks/chunk-AB7S5B7G.js";await runPost();
