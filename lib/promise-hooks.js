'use strict'
// Whether an async hook can leave promises out, so that promise reactions are followed with V8's
// promise hooks instead: the request tracker (api/requests/context.js) and labels (labels.js) both ask,
// and make those hooks here. node:v8 (which loads Node's streams) is required when first asked, not
// with the package (bench/require.mjs).
//
// Promises are most of the async callbacks of an async handler (every `await`), and Node's async hooks
// track them through wrappers that allocate async ids and push Node's own context stack for each. Where
// Node lets a hook opt out of promises (`trackPromises: false`: Node 24.21 and 26 here, not 20 or 22),
// V8's promise hooks are cheaper per await (bench/server/micro.js); elsewhere (Node 20, 22) an async
// hook sees promises as resources.

const { createHook } = require('node:async_hooks')

/** node:v8's promiseHooks (undefined where Node has none). */
const v8PromiseHooks = () => require('node:v8').promiseHooks

let answer = null

/** True when `createHook({ trackPromises: false })` really leaves promises out and V8's promise hooks exist. */
function promiseHooksInstead() {
  if (answer !== null) return answer
  answer = false
  if (typeof v8PromiseHooks()?.createHook !== 'function') return answer
  let sawPromise = false
  const probe = createHook({
    init(asyncId, type) {
      if (type === 'PROMISE') sawPromise = true
    },
    trackPromises: false,
  })
  probe.enable()
  Promise.resolve().then(() => {})
  probe.disable()
  answer = !sawPromise
  return answer
}

/** V8's promise hooks with `callbacks` ({ init, before, after, settled }); returns their stop function. */
const createPromiseHook = (callbacks) => v8PromiseHooks().createHook(callbacks)

module.exports = { promiseHooksInstead, createPromiseHook }
