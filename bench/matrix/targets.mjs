// The matrix's targets, CPU ratio to no profiler in the same round (1.000x = free): issue 28 for the
// per-request modes (every 10th request, by the plain Profiler or by profileRequests; every request),
// issue 26 for V8's sampling heap profiler running for the whole run. One place for run.mjs and table.mjs.
export const TARGETS = { prof10: 0.95, req10: 0.95, profall: 0.9, heap: 0.97 }
