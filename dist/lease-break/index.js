#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-3EWMAFES.js";import"../chunks/chunk-6TOINBI4.js";import"../chunks/chunk-LYVU7BUX.js";import"../chunks/chunk-WCWWTQGK.js";import"../chunks/chunk-ZASXCHGS.js";import"../chunks/chunk-WVNZRTIJ.js";import"../chunks/chunk-6JBN7XJF.js";import"../chunks/chunk-FEPXWI3G.js";import"../chunks/chunk-XVE2G6PN.js";import"../chunks/chunk-BEHAVKAR.js";import"../chunks/chunk-RL5H4A7J.js";await runAction("lease-break");
