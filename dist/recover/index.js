#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-J3X3QCUT.js";import"../chunks/chunk-WBVKBD64.js";await runAction("recover");
