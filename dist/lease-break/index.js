#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-3NIKQZOQ.js";import"../chunks/chunk-7VICHNX4.js";import"../chunks/chunk-A7LJHRLG.js";import"../chunks/chunk-2BBVBCTP.js";import"../chunks/chunk-YRSMUMWU.js";import"../chunks/chunk-WG4PB2VM.js";import"../chunks/chunk-FCFLMTYL.js";import"../chunks/chunk-ABPCCNYJ.js";import"../chunks/chunk-SH6RIPJL.js";import"../chunks/chunk-EV3DVTRL.js";import{init_define_NYL_YAML_MODULES}from"../chunks/chunk-JLTJPHSJ.js";init_define_NYL_YAML_MODULES();await runAction("lease-break");
