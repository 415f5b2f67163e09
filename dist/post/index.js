#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{getState}from"../chunks/chunk-7LAZTHDZ.js";import"../chunks/chunk-7YUV376Z.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();if(getState("main")!=="finished"&&getState("environment")){let{runPost}=await import("../chunks/post-step-YW5SOZF7.js");await runPost()}
