// Headless Chromium for the browser tests (the HTML flame graph, the Chrome oracle): Debian's
// chromium by default (`.ci/run` installs it); JSPROF_CHROMIUM names another Chromium/Chrome binary
// (the GitHub runner's Chrome). Driven by puppeteer-core, which downloads no browser of its own.
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
export const CHROMIUM = process.env.JSPROF_CHROMIUM || '/usr/bin/chromium'

/** node:test's `skip` option: false where the browser exists, else the reason. */
export const skipWithoutChromium = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does), or set JSPROF_CHROMIUM`

/**
 * Launches it headless for test `t` (closed when the test ends). The flags keep it off this closed
 * network: without them it keeps trying to reach Google's hosts.
 */
export async function launchChromium(t) {
  const puppeteer = require('puppeteer-core')
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  })
  t.after(() => browser.close())
  return browser
}
