#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runPost}from"../chunks/chunk-UPDYFYRJ.js";import"../chunks/chunk-Y4LWS5LM.js";await runPost();
