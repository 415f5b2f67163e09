#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{SCHEMAS,error,getInput,runAction,setFailed}from"../chunks/chunk-NUQMPVC6.js";import"../chunks/chunk-K3QBR2DQ.js";import"../chunks/chunk-JI4RHHTQ.js";import"../chunks/chunk-RL5H4A7J.js";var command=getInput("command")||"reconcile";if(command in SCHEMAS)await runAction(command);else{let msg=`input command: ${JSON.stringify(command)} is not one of ${Object.keys(SCHEMAS).join(", ")}`;error(msg,{title:"NYL-INPUT"}),setFailed(msg)}
