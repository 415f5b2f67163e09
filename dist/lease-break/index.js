#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-3ATHOAOH.js";import"../chunks/chunk-GZOWIIR3.js";await runAction("lease-break");
