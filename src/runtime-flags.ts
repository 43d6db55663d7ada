// V8 settings of the server process, imported first by src/main.ts so that they hold before any
// other module runs.
//
// Allocation-site pretenuring off. V8 watches how many objects made at one place in the code survive
// a young-generation collection; past a threshold it makes that place allocate straight into the old
// generation from then on. Under a steady load of `/fetch` pages it did that, some seconds in, to the
// driver's row objects: each then held its row's text alive through young collections, so the
// texts were promoted too — ~40 MB/s into the old generation, a full collection every 2–3 s and young
// collections of 10–15 ms instead of 1–3 (bench/README.md, "Measured 2026-11-30 (session from 02:42
// UTC)": p99 of the fetch lines at 32 clients fell with it). A request's objects live for
// milliseconds; none of them gains from being allocated old.

import { setFlagsFromString } from 'node:v8';

setFlagsFromString('--no-allocation-site-pretenuring');
