#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{getState}from"../chunks/chunk-LBAFWMHS.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();if(getState("main")!=="finished"&&getState("environment")){let{runPost}=await import("../chunks/post-step-PUNHXLR2.js");await runPost()}
