#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{getState}from"../chunks/chunk-XVE2G6PN.js";import"../chunks/chunk-BEHAVKAR.js";import"../chunks/chunk-RL5H4A7J.js";if(getState("main")!=="finished"&&getState("environment")){let{runPost}=await import("../chunks/post-step-MLADC7IX.js");await runPost()}
