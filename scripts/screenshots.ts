/**
 * `bun scripts/screenshots.ts`: screenshots of a live dashboard for the docs, made the way a user
 * sees it. Starts the service in this process on an embedded in-memory PGlite database, creates an
 * organization, a user and the page "Operations" (ten components of all five types, placed by the
 * API's defaults, fed once with fixed data and timestamps through `POST /api/component`), signs
 * in through the form in headless Chromium and writes, once the page's status says "live":
 *
 * - docs/screenshots/dashboard-1280.png — 1280 px wide, the full page
 * - docs/screenshots/dashboard-390.png — a 390×844 phone (device scale 2), the full page
 * - docs/screenshots/dashboard-kiosk-1920.png — `?kiosk=1` on a 1920×1080 screen, the viewport
 * - docs/screenshots/dashboard-dark-1280.png — 1280 px wide, dark color scheme, the full page
 *
 * Needs /usr/bin/chromium (Debian's package), as the browser tests do.
 */
import { existsSync, mkdirSync } from 'node:fs'
import { chromium, type Browser, type BrowserContextOptions } from 'playwright-core'
import { registry } from '../plugins'
import { UserLifecycleRef } from '../plugins/auth/api'
import { PasswordHasher } from '../plugins/auth/password'
import { createApiKey, createOrganization, createUser } from '../plugins/auth/service'
import { createService, type Service } from '../src/app'
import { loadConfig } from '../src/config'
import { createLogger } from '../src/log'

const CHROMIUM = '/usr/bin/chromium'
const OUT = 'docs/screenshots'
const PAGE_NAME = 'operations'
const EMAIL = 'ops@example.com'
const PASSWORD = 'screenshots password'
/** The updates' Unix seconds: fixed, so every run posts the same data (2027-01-15 08:00 UTC onwards). */
const FIRST_TIMESTAMP = 1_799_913_600
const operator = { userId: null, apiKeyId: null, via: 'cli' as const, requestId: null }

type ComponentType = 'horizontalBox' | 'verticalBox' | 'barChart' | 'lineChart' | 'pieChart'

const text = (value: string, size: number, color: string) => ({ value, size, color })

/** p95 response time (ms) by hour over a day: quiet at night, a morning and an evening peak. */
const P95_BY_HOUR = [142, 138, 131, 127, 125, 129, 151, 188, 236, 262, 248, 231, 224, 229, 241, 236, 228, 247, 281, 296, 264, 213, 176, 154]
/** CPU % every 2 minutes over an hour. */
const CPU = [38, 41, 44, 40, 37, 35, 39, 46, 58, 71, 77, 69, 61, 54, 49, 47, 45, 43, 48, 52, 50, 46, 42, 40, 39, 41, 44, 47, 45, 42]

/** The ten components of "Operations", in the order they are added (the API places each at the first free spot). */
const COMPONENTS: Array<{ type: ComponentType; title: string; data: Record<string, unknown> }> = [
  {
    type: 'horizontalBox',
    title: 'Orders today',
    data: { type: 'horizontalBox', backgroundColor: '#1e293b', leftText: text('Orders', 18, '#f8fafc'), middleText: text('1,204', 32, '#38bdf8'), rightText: text('+4%', 18, '#4ade80') },
  },
  {
    type: 'horizontalBox',
    title: 'Revenue today',
    data: { type: 'horizontalBox', backgroundColor: '#14532d', leftText: text('Revenue', 18, '#f0fdf4'), middleText: text('$48.2k', 32, '#86efac'), rightText: text('+2.1%', 18, '#bbf7d0') },
  },
  {
    type: 'verticalBox',
    title: 'Uptime',
    data: { type: 'verticalBox', backgroundColor: '#fff7ed', topText: text('Uptime, 30 days', 16, '#9a3412'), bottomText: text('99.98%', 28, '#ea580c') },
  },
  {
    type: 'verticalBox',
    title: 'Error rate',
    data: { type: 'verticalBox', backgroundColor: '#fef2f2', topText: text('5xx, last hour', 16, '#991b1b'), bottomText: text('0.12%', 28, '#dc2626') },
  },
  {
    type: 'verticalBox',
    title: 'Queue depth',
    data: { type: 'verticalBox', backgroundColor: '#eff6ff', topText: text('Jobs waiting', 16, '#1e3a8a'), bottomText: text('82', 28, '#2563eb') },
  },
  {
    type: 'verticalBox',
    title: 'Deploys today',
    data: { type: 'verticalBox', backgroundColor: '#f0fdf4', topText: text('Deploys', 16, '#14532d'), bottomText: text('14', 28, '#16a34a') },
  },
  {
    type: 'barChart',
    title: 'Deployments per weekday',
    data: {
      type: 'barChart',
      backgroundColor: '#f8fafc',
      xNumber: false,
      height: 220,
      points: [
        ['Mon', 12],
        ['Tue', 19],
        ['Wed', 15],
        ['Thu', 22],
        ['Fri', 9],
        ['Sat', 2],
        ['Sun', 1],
      ].map(([x, y]) => ({ x, y, color: '#2563eb' })),
    },
  },
  {
    type: 'lineChart',
    title: 'Response time p95 (ms), last 24 h',
    data: {
      type: 'lineChart',
      backgroundColor: '#ecfeff',
      cubic: true,
      xNumber: false,
      fillColor: '#a5f3fc',
      height: 220,
      points: P95_BY_HOUR.map((y, hour) => ({ x: `${String(hour).padStart(2, '0')}:00`, y, color: '#0e7490' })),
    },
  },
  {
    type: 'pieChart',
    title: 'Sprint 42',
    data: {
      type: 'pieChart',
      backgroundColor: '#fefce8',
      height: 240,
      points: [
        { x: 'Done', y: 58, color: '#16a34a' },
        // No color: the renderer picks one from its palette.
        { x: 'In progress', y: 27, color: '' },
        { x: 'Todo', y: 15, color: '#94a3b8' },
      ],
    },
  },
  {
    type: 'lineChart',
    title: 'CPU %, last hour',
    data: {
      type: 'lineChart',
      backgroundColor: '#fffbeb',
      cubic: false,
      xNumber: true,
      fillColor: '#fde68a',
      height: 220,
      points: CPU.map((y, i) => ({ x: String(i * 2), y, color: '#b45309' })),
    },
  },
]

/** One request to the in-process service; fails on anything but 2xx. */
async function call(service: Service, method: string, path: string, options: { key?: string; body?: unknown } = {}): Promise<any> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (options.key) headers.authorization = `Bearer ${options.key}`
  const response = await service.fetch(new Request(`http://localhost${path}`, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) }))
  const answer = await response.text()
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${answer}`)
  return answer ? JSON.parse(answer) : null
}

async function seed(service: Service): Promise<void> {
  const db = service.core.db
  const organization = await createOrganization(db, operator, { name: 'Acme Operations' })
  const hooks = service.core.services.get(UserLifecycleRef).createdHooks()
  const { user, extra } = await createUser(
    db,
    operator,
    { organizationId: organization.id, email: EMAIL, username: 'ops', displayName: 'Ops Team', role: 'member', password: PASSWORD },
    { hasher: new PasswordHasher({ logN: 10, maxConcurrent: 2 }), hooks },
  )
  const displayKey = extra.displayApiKey
  if (typeof displayKey !== 'string') throw new Error('the user got no display key (is the display plugin enabled?)')
  const scopes = ['dashboards:read', 'dashboards:write']
  const { secret } = await createApiKey(db, operator, user.id, { name: 'screenshots', scopes }, new Set(scopes))
  const page = (await call(service, 'POST', '/api/v1/pages', { key: secret, body: { name: PAGE_NAME, title: 'Operations' } })).data
  let timestamp = FIRST_TIMESTAMP
  for (const component of COMPONENTS) {
    // No x/y/width/height: the API's default size and first free place.
    const { id } = (await call(service, 'POST', `/api/v1/pages/${page.id}/components`, { key: secret, body: { type: component.type, title: component.title } })).data
    await call(service, 'POST', '/api/component', { body: { componentId: id, apiKey: displayKey, timestamp: (timestamp += 60), data: component.data } })
  }
}

async function shoot(browser: Browser, base: string, storageState: BrowserContextOptions['storageState'], file: string, options: { context: BrowserContextOptions; query?: string; fullPage: boolean }) {
  const context = await browser.newContext({ ...options.context, storageState })
  const page = await context.newPage()
  await page.goto(`${base}/pages/${PAGE_NAME}${options.query ?? ''}`)
  await page.waitForFunction(() => document.querySelector('[data-status]')?.textContent === 'live')
  // Let fonts, layout and the kiosk fit settle (two frames after the last change).
  await page.evaluate(() => document.fonts.ready.then(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))))
  await page.screenshot({ path: `${OUT}/${file}`, fullPage: options.fullPage })
  await context.close()
  console.log(`${OUT}/${file}`)
}

async function main(): Promise<void> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is not installed (Debian's chromium package)`)
  const config = loadConfig(registry, { raw: { auth: { passwordHashLogN: 10 } }, env: { DATABASE_URL: 'pglite://memory' } })
  const service = await createService({ registry, config, log: createLogger('error') })
  const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request, bun) => service.fetch(request, { ip: bun.requestIP(request)?.address }) })
  const base = `http://127.0.0.1:${server.port}`
  let browser: Browser | undefined
  try {
    await seed(service)
    mkdirSync(OUT, { recursive: true })
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic'],
    })
    // Sign in once through the form; every screenshot's context starts with its cookie.
    const signIn = await browser.newContext()
    const form = await signIn.newPage()
    await form.goto(`${base}/account/sign-in`)
    await form.fill('input[name=email]', EMAIL)
    await form.fill('input[name=password]', PASSWORD)
    await Promise.all([form.waitForURL(`${base}/account/keys`), form.click('button[type=submit]')])
    const storageState = await signIn.storageState()
    await signIn.close()

    await shoot(browser, base, storageState, 'dashboard-1280.png', { context: { viewport: { width: 1280, height: 800 } }, fullPage: true })
    await shoot(browser, base, storageState, 'dashboard-390.png', { context: { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true }, fullPage: true })
    await shoot(browser, base, storageState, 'dashboard-kiosk-1920.png', { context: { viewport: { width: 1920, height: 1080 } }, query: '?kiosk=1', fullPage: false })
    await shoot(browser, base, storageState, 'dashboard-dark-1280.png', { context: { viewport: { width: 1280, height: 800 }, colorScheme: 'dark' }, fullPage: true })
  } finally {
    await browser?.close()
    server.stop(true)
    await service.stop()
  }
}

await main()
process.exit(0)
