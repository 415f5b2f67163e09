#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{SCHEMAS,error,getInput,runAction,setFailed}from"../chunks/chunk-Y4R3FUV5.js";import"../chunks/chunk-XKNLMXGB.js";var command=getInput("command")||"reconcile";if(command in SCHEMAS)await runAction(command);else{let msg=`input command: ${JSON.stringify(command)} is not one of ${Object.keys(SCHEMAS).join(", ")}`;error(msg,{title:"NYL-INPUT"}),setFailed(msg)}
