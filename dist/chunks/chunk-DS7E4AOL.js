#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{init_define_NYL_YAML_MODULES}from"./chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();var Exit={ok:0,failed:1,refused:2,drift:3,uncertain:4},NylError=class extends Error{problems;constructor(problems){let list=Array.isArray(problems)?problems:[problems];super(list.map(p=>`${p.code}: ${p.message}`).join(`
`)),this.problems=list}get exit(){return worstExit(this.problems.map(p=>p.exit))}};function problem(code,message,opts={}){return{severity:opts.severity??"error",code,subject:opts.subject,message,fix:opts.fix,exit:opts.exit??Exit.failed}}function worstExit(codes){let order=[Exit.uncertain,Exit.failed,Exit.drift,Exit.refused];for(let c of order)if(codes.includes(c))return c;return Exit.ok}export{Exit,NylError,problem,worstExit};
