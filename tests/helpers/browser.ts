/** Headless Chromium (Debian's package) driven by playwright-core, as the project's browser tests use it. */
import { existsSync, mkdirSync } from 'node:fs'
import { chromium, type Browser } from 'playwright-core'

export const CHROMIUM = '/usr/bin/chromium'
export const chromiumAvailable = existsSync(CHROMIUM)

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic'],
  })
}

/** Where screenshots go (ignored by git). */
export function artifactPath(name: string): string {
  mkdirSync('tests/artifacts', { recursive: true })
  return `tests/artifacts/${name}`
}
