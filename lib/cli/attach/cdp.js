'use strict'
// The Chrome DevTools Protocol client jsprof attach talks to an inspector with: its target list over
// HTTP (getJson) and its commands and events over a WebSocket (connect, evaluate). Every wait on the
// target, or on whatever answers on its port, is bounded in time and size (issue 24): a slow, huge or
// malformed answer is a BadReply saying what it was, never a hang.

const http = require('node:http')

const LIST_TIMEOUT_MS = 3000 // the whole /json/list exchange
const LIST_MAX_BYTES = 1024 * 1024 // its body
const HANDSHAKE_TIMEOUT_MS = 5000 // the whole WebSocket handshake
const REPLY_TIMEOUT_MS = 15_000 // each reply but the profiles'

/** An inspector reply or event that is not what the protocol says: reported as what it is. */
class BadReply extends Error {}

/**
 * GET `urlPath` from host:port as JSON, bounded in time (the whole exchange) and size: the value, or
 * `{ problem }` saying why not.
 */
function getJson(host, port, urlPath) {
  return new Promise((resolve) => {
    let settled = false
    const done = (value) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      req.destroy()
      resolve(value)
    }
    const timer = setTimeout(() => done({ problem: `no answer within ${LIST_TIMEOUT_MS / 1000} s` }), LIST_TIMEOUT_MS)
    const req = http.get({ host, port, path: urlPath, agent: false }, (res) => {
      const chunks = []
      let size = 0
      res.on('data', (d) => {
        size += d.length
        if (size > LIST_MAX_BYTES) done({ problem: `its answer exceeds ${LIST_MAX_BYTES / 1024} KiB` })
        else chunks.push(d)
      })
      res.on('end', () => {
        try {
          done(JSON.parse(Buffer.concat(chunks).toString('utf8')))
        } catch {
          done({ problem: 'its answer is not JSON' })
        }
      })
      res.on('error', (err) => done({ problem: err.message }))
      res.on('close', () => done({ problem: 'the connection closed' }))
    })
    req.on('error', (err) => done({ problem: err.message }))
  })
}

/**
 * A minimal Chrome DevTools Protocol client on `ws`: the handshake bounded in time, every message in
 * size (`maxPayload`), every reply in time. `onEvent(method, params)` gets the events; `closed` is a
 * promise of how the connection ended.
 */
function connect(url, { maxPayload, onEvent = () => {} }) {
  const WebSocket = require('ws')
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, {
      perMessageDeflate: false,
      maxPayload,
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
      followRedirects: false,
    })
    // ws's handshakeTimeout is an idle timeout: an answer dripping in byte by byte is cut here.
    const handshake = setTimeout(() => {
      ws.terminate()
      reject(new Error(`no WebSocket handshake within ${HANDSHAKE_TIMEOUT_MS / 1000} s`))
    }, HANDSHAKE_TIMEOUT_MS)
    let nextId = 1
    const pending = new Map()
    let endReason = null
    let endClosed
    const closed = new Promise((r) => (endClosed = r))
    // Every pending command fails at once, its timer with it (a timer left would hold jsprof's exit).
    const fail = (err) => {
      for (const p of pending.values()) {
        clearTimeout(p.timer)
        p.reject(err)
      }
      pending.clear()
    }
    ws.on('message', (data) => {
      let message
      try {
        message = JSON.parse(data)
      } catch {
        endReason = 'it sent a message that is not JSON'
        fail(new BadReply('it sent a message that is not JSON'))
        return
      }
      if (message === null || typeof message !== 'object') {
        fail(new BadReply('it sent a message that is not a JSON object'))
        return
      }
      if (typeof message.method === 'string' && message.id === undefined) {
        onEvent(message.method, message.params)
        return
      }
      const p = pending.get(message.id)
      if (!p) return
      pending.delete(message.id)
      clearTimeout(p.timer)
      if (message.error) {
        const text = message.error && typeof message.error.message === 'string' ? message.error.message : 'an error'
        p.reject(new BadReply(`it answered ${p.method} with the error ${JSON.stringify(text.slice(0, 200))}`))
      } else if (message.result === null || typeof message.result !== 'object') {
        p.reject(new BadReply(`it answered ${p.method} without a result`))
      } else p.resolve(message.result)
    })
    ws.on('close', (code, reason) => {
      clearTimeout(handshake)
      const why =
        code === 1009
          ? `it sent a message larger than ${Math.round(maxPayload / 1024 / 1024)} MiB`
          : (endReason ?? `the connection closed${reason && reason.length ? ` (${reason})` : ''}`)
      fail(new BadReply(`the connection ended: ${why}`))
      endClosed(why)
    })
    ws.once('error', (err) => {
      clearTimeout(handshake)
      reject(err)
    })
    ws.once('open', () => {
      clearTimeout(handshake)
      ws.on('error', (err) => {
        if (/max(imum)? payload|too big/i.test(err.message))
          endReason = `it sent a message larger than ${Math.round(maxPayload / 1024 / 1024)} MiB`
      })
      resolve({
        closed,
        /** A command's result; rejects with a BadReply after `timeoutMs` without one. */
        send(method, params = {}, timeoutMs = REPLY_TIMEOUT_MS) {
          return new Promise((res, rej) => {
            if (ws.readyState !== WebSocket.OPEN) {
              rej(new BadReply(`the connection ended before ${method}`))
              return
            }
            const id = nextId++
            const timer = setTimeout(() => {
              pending.delete(id)
              rej(new BadReply(`no answer to ${method} within ${timeoutMs / 1000} s`))
            }, timeoutMs)
            pending.set(id, { resolve: res, reject: rej, timer, method })
            ws.send(JSON.stringify({ id, method, params }), (err) => {
              if (err && pending.delete(id)) {
                clearTimeout(timer)
                rej(err)
              }
            })
          })
        },
        /** A command whose answer is not awaited (it closes the connection). */
        post(method, params = {}) {
          if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ id: nextId++, method, params }), () => {})
        },
        get open() {
          return ws.readyState === WebSocket.OPEN
        },
        close() {
          ws.terminate()
        },
      })
    })
  })
}

async function evaluate(cdp, expression) {
  const r = await cdp.send('Runtime.evaluate', { expression, returnByValue: true, silent: true })
  if (r.exceptionDetails) throw new BadReply(`evaluating in the process failed: ${r.exceptionDetails.text}`)
  if (r.result === null || typeof r.result !== 'object')
    throw new BadReply('it answered Runtime.evaluate without a value')
  return r.result.value
}

module.exports = { BadReply, getJson, connect, evaluate, LIST_MAX_BYTES }
