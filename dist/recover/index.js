#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-2MWYVIZF.js";import"../chunks/chunk-DA5NH6WK.js";import"../chunks/chunk-PKNAHUVT.js";import"../chunks/chunk-PNEVLE6Q.js";import"../chunks/chunk-OWHONWEO.js";import"../chunks/chunk-VXIOOZMN.js";import"../chunks/chunk-RL5H4A7J.js";await runAction("recover");
