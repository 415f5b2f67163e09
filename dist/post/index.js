#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runPost}from"../chunks/chunk-4JZ5SGGD.js";import"../chunks/chunk-R74CSUY7.js";await runPost();
