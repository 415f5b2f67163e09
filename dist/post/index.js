#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{getState}from"../chunks/chunk-U6O4EEAX.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-WHNAJYLB.js";init_define_NYL_YAML_MODULES();if(getState("main")!=="finished"&&getState("environment")){let{runPost}=await import("../chunks/post-step-IE6V7G5L.js");await runPost()}
