#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-WINY2DRP.js";import"../chunks/chunk-66WDMDAE.js";import"../chunks/chunk-7TQIEJNI.js";import"../chunks/chunk-KSPJYB4W.js";import"../chunks/chunk-K4VRCLQF.js";import"../chunks/chunk-6ZIS3FML.js";import"../chunks/chunk-IVQFO3T6.js";import"../chunks/chunk-GEVS6IBD.js";import"../chunks/chunk-XK22SXQV.js";import"../chunks/chunk-6FOV7QUV.js";import"../chunks/chunk-CCC2Q3CU.js";await runAction("verify");
