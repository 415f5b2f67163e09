#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runPost}from"../chunks/chunk-E6KYVBSU.js";import"../chunks/chunk-YHEPE5JK.js";await runPost();
