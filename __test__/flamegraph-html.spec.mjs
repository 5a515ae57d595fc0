// toFlameGraph(trace, { format: 'html' }) in a real browser: Debian's headless Chromium driven by
// puppeteer-core. The page is loaded from disk with every network request recorded (and refused), then
// used as a person would: hover a frame (tooltip), click one (zoom), type a search (highlight + share).
// Frame names are hostile (</script>, <img onerror>, U+2028, control characters): they must show as
// text and no script from a name may run. A screenshot is written to .cache/flamegraph-html.png
// (JSPROF_SCREENSHOT=<path> to put it elsewhere). `.ci/run` installs chromium, so CI never skips this.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

import { toFlameGraph } from 'jsprof-node'
import { launchChromium, skipWithoutChromium } from './chromium.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const skip = skipWithoutChromium

const HOSTILE = [
  '</script><script>window.__pwned = "script"</script>',
  '<img src=x onerror="window.__pwned = \'img\'">',
  'line\u2028sep\u2029para',
  'ctl\u0001\u0007\u001b[31mred',
  '{{DATA}} {{TITLE}}',
]

/** main -> work -> chunk (lodash 4.17.21, pnpm layout) ×6; main -> now ×2; main -> <hostile i> ×1 each; GC ×2. */
function trace() {
  const t = {
    resources: ['file:///app/main.js', 'file:///app/node_modules/.pnpm/lodash@4.17.21/node_modules/lodash/chunk.js'],
    frames: [
      { name: 'main', resourceId: 0, line: 1, column: 1 },
      { name: 'work', resourceId: 0, line: 10, column: 3 },
      { name: 'chunk', resourceId: 1, line: 5, column: 17 },
      { name: 'now' },
    ],
    stacks: [{ frameId: 0 }, { frameId: 1, parentId: 0 }, { frameId: 2, parentId: 1 }, { frameId: 3, parentId: 0 }],
    samples: [],
  }
  for (const name of HOSTILE) {
    t.frames.push({ name, resourceId: 0, line: 30 + t.frames.length, column: 1 })
    t.stacks.push({ frameId: t.frames.length - 1, parentId: 0 })
  }
  const at = (stackId) => t.samples.push({ timestamp: t.samples.length, stackId, marker: 'script' })
  for (let i = 0; i < 6; i++) at(2)
  at(3)
  at(3)
  for (let s = 4; s < t.stacks.length; s++) at(s)
  t.samples.push({ timestamp: t.samples.length, marker: 'gc' }, { timestamp: t.samples.length + 1, marker: 'gc' })
  return t
}

test(
  'the HTML flame graph in headless Chromium: offline, zoom, search, tooltips, hostile names as text',
  { skip, timeout: 120000 },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'jsprof-flame-'))
    t.after(() => rmSync(dir, { recursive: true, force: true }))
    const file = join(dir, 'flame.html')
    const total = trace().samples.length // 6 + 2 + 5 + 2 = 15
    writeFileSync(file, toFlameGraph(trace(), { format: 'html', title: '<b>Shop</b> & co' }))

    const browser = await launchChromium(t)
    const page = await browser.newPage()
    await page.setViewport({ width: 1100, height: 420 })
    const external = []
    const dialogs = []
    const errors = []
    await page.setRequestInterception(true)
    page.on('request', (req) => {
      if (req.url().startsWith('file:')) req.continue()
      else {
        external.push(req.url())
        req.abort()
      }
    })
    page.on('dialog', (d) => {
      dialogs.push(d.message())
      d.dismiss()
    })
    page.on('pageerror', (e) => errors.push(e.message))
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' })

    const frames = () =>
      page.$$eval('#chart .f', (els) =>
        els.map((e) => ({
          id: Number(e.dataset.id),
          text: e.textContent,
          left: e.offsetLeft,
          width: e.offsetWidth,
          cls: e.className,
        })),
      )
    const chartWidth = await page.$eval('#chart', (e) => e.clientWidth)
    const shown = await frames()
    const byText = (list, prefix) => list.find((f) => f.text.startsWith(prefix))

    // Title and every frame, names as text.
    assert.equal(await page.title(), '<b>Shop</b> & co')
    assert.equal(await page.$eval('h1', (e) => e.textContent), '<b>Shop</b> & co')
    assert.equal(
      await page.$$eval('h1 b, img, iframe, object, embed', (e) => e.length),
      0,
      'no element made from a name',
    )
    assert.equal(await page.$$eval('script', (e) => e.length), 2, "only the page's own two scripts")
    assert.ok(byText(shown, 'all') && byText(shown, 'main (/app/main.js:1:1)') && byText(shown, 'chunk ('))
    const labels = shown.map((f) => f.text)
    assert.ok(labels.includes(`${HOSTILE[0]} (/app/main.js:34:1)`), labels.join('\n'))
    assert.ok(labels.includes(`${HOSTILE[1]} (/app/main.js:35:1)`))
    assert.ok(labels.includes('line\\u{2028}sep\\u{2029}para (/app/main.js:36:1)'), 'U+2028/9 shown as escapes')
    assert.ok(labels.includes('ctl\\x01\\x07\\x1b[31mred (/app/main.js:37:1)'), 'control characters shown as escapes')
    assert.ok(labels.includes('{{DATA}} {{TITLE}} (/app/main.js:38:1)'))
    assert.equal(await page.evaluate(() => window.__pwned), undefined, 'no script from a name ran')
    assert.deepEqual(dialogs, [])
    // Widths follow time (the samples are 1 ms apart): the root spans the chart, chunk has 6 of 15.
    const all = byText(shown, 'all')
    assert.ok(Math.abs(all.width - chartWidth) <= 1, `${all.width} vs ${chartWidth}`)
    const chunk = byText(shown, 'chunk (')
    assert.ok(Math.abs(chunk.width - (chartWidth * 6) / total) <= 1.5, `chunk ${chunk.width}`)

    // Tooltip on hover: time, share, kind, package@version.
    const chunkEl = await page.$(`#chart .f[data-id="${chunk.id}"]`)
    await chunkEl.hover()
    const tip = await page.$eval('#tip', (e) => ({ text: e.textContent, display: getComputedStyle(e).display }))
    assert.equal(tip.display, 'block')
    assert.match(
      tip.text,
      /^chunk \(\/app\/node_modules\/\.pnpm\/lodash@4\.17\.21\/node_modules\/lodash\/chunk\.js:5:17\)/,
    )
    assert.match(tip.text, /6\.00 ms, 6 samples: 40% of all/)
    assert.match(tip.text, /kind: dependency, package: lodash@4\.17\.21/)

    // Zoom: click `work`; it and its subtree fill the width, `now` and the GC frame are gone.
    const work = byText(shown, 'work (')
    await page.click(`#chart .f[data-id="${work.id}"]`)
    const zoomed = await frames()
    const workZoomed = zoomed.find((f) => f.id === work.id)
    assert.ok(workZoomed.left === 0 && Math.abs(workZoomed.width - chartWidth) <= 1, JSON.stringify(workZoomed))
    assert.ok(Math.abs(zoomed.find((f) => f.id === chunk.id).width - chartWidth) <= 1, 'chunk is all of work')
    assert.equal(byText(zoomed, 'now'), undefined, 'a sibling of work is not drawn')
    assert.equal(byText(zoomed, '(garbage collector)'), undefined)
    assert.match(byText(zoomed, 'main (').cls, /ancestor/)
    assert.match(
      await page.$eval('#crumbs', (e) => e.textContent),
      /Zoomed into: all → main \(\/app\/main\.js:1:1\) → work/,
    )
    await page.screenshot({ path: join(dir, 'zoomed.png') })
    await page.click('#reset')
    assert.equal((await frames()).length, shown.length, 'reset shows every frame again')

    // Search: by package name, then by a hostile name; highlighted frames and the matched share. The
    // page searches once per animation frame: wait for the count to show the whole query's result.
    const searchFor = async (text, expected) => {
      await page.$eval('#search', (e) => (e.value = ''))
      await page.type('#search', text)
      await page.waitForFunction(
        (want) => document.querySelector('#matched').textContent === want,
        { timeout: 10000 },
        expected,
      )
    }
    await searchFor('LODASH', '1 frame matched: 40% of the time (6 samples)')
    let matched = (await frames()).filter((f) => /\bmatch\b/.test(f.cls))
    assert.deepEqual(
      matched.map((f) => f.id),
      [chunk.id],
    )
    await searchFor('<img', `1 frame matched: ${(100 / total).toFixed(2)}% of the time (1 sample)`)
    matched = (await frames()).filter((f) => /\bmatch\b/.test(f.cls))
    assert.deepEqual(
      matched.map((f) => f.text),
      [`${HOSTILE[1]} (/app/main.js:35:1)`],
    )
    // main and the five frames in main.js: counted once, 13 of 15 samples.
    await searchFor('main', '7 frames matched: 86.67% of the time (13 samples)')

    const shot = process.env.JSPROF_SCREENSHOT || join(root, '.cache', 'flamegraph-html.png')
    mkdirSync(dirname(shot), { recursive: true })
    await page.screenshot({ path: shot })
    assert.deepEqual(external, [], 'no request left the page')
    assert.deepEqual(errors, [], 'no script error')
    assert.equal(await page.evaluate(() => window.__pwned), undefined)
  },
)

test(
  'a labelled trace: the picker draws one label value alone, hostile values as text',
  { skip, timeout: 60000 },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'jsprof-flame-'))
    t.after(() => rmSync(dir, { recursive: true, force: true }))
    const file = join(dir, 'labelled.html')
    const labelled = trace()
    // The six chunk samples are GET /a's, the two `now` samples a hostile route's, the rest unlabelled.
    const hostileRoute = 'GET /b<img src=x onerror="window.__pwned = 1">\u001b[2J'
    labelled.jsprof = {
      labelSets: [{ route: 'GET /a' }, { route: hostileRoute }],
      sampleLabels: labelled.samples.map((s) => (s.stackId === 2 ? 0 : s.stackId === 3 ? 1 : null)),
    }
    writeFileSync(file, toFlameGraph(labelled, { format: 'html' }))
    const browser = await launchChromium(t)
    const page = await browser.newPage()
    await page.setViewport({ width: 1100, height: 420 })
    const errors = []
    page.on('pageerror', (e) => errors.push(e.message))
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' })
    const texts = () => page.$$eval('#chart .f', (els) => els.map((e) => e.textContent))
    const options = await page.$$eval('#view option', (els) => els.map((e) => [e.value, e.textContent]))
    assert.deepEqual(
      options.map(([, text]) => text),
      ['all', 'route = GET /a (40%)', 'route = GET /b<img src=x onerror="window.__pwned = 1">\\x1b[2J (13.33%)'],
    )
    assert.ok((await texts()).some((x) => x.startsWith('now')))

    await page.select('#view', options[1][0])
    const onlyA = await texts()
    assert.ok(
      onlyA.some((x) => x.startsWith('chunk (')),
      onlyA.join('\n'),
    )
    assert.ok(!onlyA.some((x) => x.startsWith('now') || x.startsWith('(garbage')), onlyA.join('\n'))
    // The root is the value's samples alone: 6 samples, across the whole width.
    assert.match(await page.$eval('#subtitle', (e) => e.textContent), /route = GET \/a: 6 samples/)
    const rootWidth = await page.$eval('#chart .f[data-id="0"]', (e) => e.offsetWidth)
    assert.ok(rootWidth >= (await page.$eval('#chart', (e) => e.clientWidth)) - 1)

    await page.select('#view', options[2][0])
    const onlyB = await texts()
    assert.ok(onlyB.some((x) => x.startsWith('now')) && !onlyB.some((x) => x.startsWith('chunk (')), onlyB.join('\n'))
    await page.select('#view', '')
    assert.ok((await texts()).some((x) => x.startsWith('chunk (')))
    assert.equal(await page.$$eval('img', (e) => e.length), 0, 'no element made from a label value')
    assert.equal(await page.evaluate(() => window.__pwned), undefined)
    assert.deepEqual(errors, [])
  },
)

test('a trace with no samples gives a page that says so', { skip, timeout: 60000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'jsprof-flame-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'empty.html')
  writeFileSync(file, toFlameGraph({ resources: [], frames: [], stacks: [], samples: [] }, { format: 'html' }))
  const browser = await launchChromium(t)
  const page = await browser.newPage()
  const errors = []
  page.on('pageerror', (e) => errors.push(e.message))
  await page.goto(pathToFileURL(file).href, { waitUntil: 'load' })
  assert.equal(await page.$eval('#chart', (e) => e.textContent), 'No samples.')
  assert.deepEqual(errors, [])
})

test('a name that is not well-formed UTF-16 (a lone surrogate) is shown as visible text, in every export and fromCpuProfile', async () => {
  const { toCollapsed, toCpuProfile } = await import('jsprof-node')
  const t = trace()
  t.frames[3].name = 'now\ud800x'
  assert.match(toFlameGraph(t), /<title>now\\u\{d800\}x \(2 ms, 2 samples/)
  assert.ok(toFlameGraph(t, { format: 'html' }).includes('"now\\\\u{d800}x"'))
  assert.match(toCollapsed(t), /;now\\u\{d800\}x 2000\n/)
  assert.ok(toCpuProfile(t).nodes.some((n) => n.callFrame.functionName === 'now\\u{d800}x'))
  // fromCpuProfile too (an object is stringified on its way to Rust), rather than a SyntaxError.
  const { fromCpuProfile } = await import('jsprof-node')
  const profile = {
    nodes: [
      { id: 1, callFrame: { functionName: '(root)', url: '' }, children: [2] },
      { id: 2, callFrame: { functionName: 'f\udc00', url: '' } },
    ],
    startTime: 0,
    endTime: 1,
    samples: [2],
    timeDeltas: [1],
  }
  assert.deepEqual(fromCpuProfile(profile).frames, [{ name: 'f\\u{dc00}' }])
})

test('format is checked: svg (default) or html', () => {
  const t = trace()
  assert.match(toFlameGraph(t, { format: 'svg' }), /^<\?xml/)
  assert.match(toFlameGraph(t, { format: 'html' }), /^<!DOCTYPE html>/)
  assert.throws(() => toFlameGraph(t, { format: 'png' }), TypeError)
  assert.throws(() => toFlameGraph(t, { format: 1 }), TypeError)
})

/**
 * A deep trace, as an eslint run gives one: 60% of the time in shallow stacks (main -> rule<k>, 20
 * rules), 40% in one traversal 80 frames deep (drawn: wider than the window is tall), and a few samples
 * 400 frames deep (too narrow to draw, but as deep as a graph could be).
 */
function deepTrace() {
  const t = { resources: ['file:///app/lint.js'], frames: [], stacks: [], samples: [] }
  const frame = (name, line) => {
    t.frames.push({ name, resourceId: 0, line, column: 1 })
    return t.frames.length - 1
  }
  const push = (frameId, parentId) => {
    t.stacks.push(parentId === undefined ? { frameId } : { frameId, parentId })
    return t.stacks.length - 1
  }
  const main = push(frame('main', 1))
  const rules = Array.from({ length: 20 }, (_, k) => push(frame(`rule${k}`, 10 + k), main))
  let deep = main
  const traverse = frame('traverse', 100)
  const chain = []
  for (let d = 0; d < 400; d++) chain.push((deep = push(traverse, deep)))
  const at = (stackId) => t.samples.push({ timestamp: t.samples.length, stackId, marker: 'script' })
  for (let i = 0; i < 6000; i++) at(rules[i % 20])
  for (let i = 0; i < 4000; i++) at(chain[79])
  for (let i = 0; i < 3; i++) at(chain[399])
  return t
}

test(
  'a deep trace: the page shows the graph at 1400×900, root first, as tall as its drawn frames',
  { skip, timeout: 120000 },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'jsprof-flame-deep-'))
    t.after(() => rmSync(dir, { recursive: true, force: true }))
    const file = join(dir, 'deep.html')
    writeFileSync(file, toFlameGraph(deepTrace(), { format: 'html', title: 'lint' }))
    const browser = await launchChromium(t)
    const page = await browser.newPage()
    await page.setViewport({ width: 1400, height: 900 })
    const errors = []
    page.on('pageerror', (e) => errors.push(e.message))
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' })
    // What a person sees without scrolling: frames whose box lies in the window.
    const inView = () =>
      page.$$eval('#chart .f', (els) =>
        els
          .map((e) => ({ text: e.textContent, r: e.getBoundingClientRect() }))
          .filter(({ r }) => r.bottom > 0 && r.top < window.innerHeight && r.width >= 1)
          .map(({ text, r }) => ({ text, top: r.top, bottom: r.bottom })),
      )
    let seen = await inView()
    assert.ok(
      seen.some((f) => f.text === 'all'),
      'the root is in view at once',
    )
    assert.ok(seen.some((f) => f.text.startsWith('main (')))
    assert.ok(seen.filter((f) => f.text.startsWith('rule')).length === 20, 'the wide frames near the root are in view')
    assert.ok(seen.length >= 40, `${seen.length} frames in view`)
    // As tall as its drawn frames (81 rows of 18 px: all, main, 80 traverse), not the 402 of the deepest
    // stack, whose frames are too narrow to draw.
    const height = await page.$eval('#chart', (e) => e.offsetHeight)
    assert.equal(height, 82 * 18)
    // The deepest drawn frame is a scroll down.
    await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight))
    seen = await inView()
    assert.ok(seen.filter((f) => f.text.startsWith('traverse (')).length > 5)
    // Root at the bottom, flamegraph.pl's way: the page scrolls to show the root.
    await page.evaluate(() => window.scrollTo(0, 0))
    await page.click('#flip')
    seen = await inView()
    const root = seen.find((f) => f.text === 'all')
    assert.ok(root, 'the root is in view after flipping')
    assert.ok(
      seen.every((f) => f.top <= root.top),
      'and it is the lowest frame',
    )
    assert.equal(await page.$eval('#flip', (e) => e.textContent), 'Root at top')
    await page.click('#flip')
    assert.ok((await inView()).some((f) => f.text === 'all'))
    assert.deepEqual(errors, [])
  },
)
