#!/usr/bin/env node
import { createRequire as __nylCreateRequire } from 'node:module';
const require = __nylCreateRequire(import.meta.url);
import{runAction}from"../chunks/chunk-OB5GBUJP.js";import"../chunks/chunk-K77GTWSD.js";await runAction("lease-break");
