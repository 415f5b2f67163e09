#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runPost}from"../chunks/chunk-R3WRIBRN.js";import"../chunks/chunk-DL5YVMWQ.js";await runPost();
