#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-BR6LATQN.js";import"../chunks/chunk-DA5NH6WK.js";import"../chunks/chunk-OIOUUVP7.js";import"../chunks/chunk-JJO2TSBS.js";import"../chunks/chunk-OWHONWEO.js";import"../chunks/chunk-JMHBY7YU.js";import"../chunks/chunk-RL5H4A7J.js";await runAction("verify");
