#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{getState}from"../chunks/chunk-XK22SXQV.js";import"../chunks/chunk-6FOV7QUV.js";import"../chunks/chunk-CCC2Q3CU.js";if(getState("main")!=="finished"&&getState("environment")){let{runPost}=await import("../chunks/post-step-JYTC7DZW.js");await runPost()}
