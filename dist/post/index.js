#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runPost}from"../chunks/chunk-3ATHOAOH.js";import"../chunks/chunk-GZOWIIR3.js";await runPost();
