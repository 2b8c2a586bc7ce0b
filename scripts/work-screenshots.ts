/**
 * `bun scripts/work-screenshots.ts`: screenshots of a dashboard fed by a project's work items (work
 * sources, plugins/work-dashboards), made the way a user sees it. Starts the service in this
 * process on an embedded in-memory PGlite database and seeds, through API v1:
 *
 * - the organization "Acme Engineering", its administrator (who signs in) and five engineers;
 * - the project "Engineering" (key ENG), five labels and 40 work items of varied statuses,
 *   priorities, assignees and labels, and the shared view "Open work" (to do and in progress);
 * - the page "Engineering" with seven components bound to ENG: the open count (the view), the
 *   median cycle time, work by status (pie), by priority (bar), created per day (bar), open over
 *   time (line) and open work by assignee (bar), placed on the grid.
 *
 * The work items are made now; so that the daily series and cycle time show weeks of history, the
 * script then moves each item's created, started and closed times back (fixed, deterministic ages)
 * in SQL, as an import from another tracker would leave them, before the sources are bound (a
 * binding's first computation reads every item). Once every component has its data, it signs in
 * through the form in headless Chromium and writes, once the page's status says "live":
 *
 * - docs/screenshots/work-dashboard-1280.png — 1280 px wide, the full page
 * - docs/screenshots/work-dashboard-kiosk-1920.png — `?kiosk=1` on a 1920×1080 screen, the viewport
 *
 * The dates on the series' axes are the days before the run (UTC). Logs errors only (LOG_LEVEL=warn
 * shows, e.g., a recomputation that fails). Needs /usr/bin/chromium (Debian's package), as the
 * browser tests do.
 */
import { existsSync, mkdirSync } from 'node:fs'
import { chromium, type Browser, type BrowserContextOptions } from 'playwright-core'
import { registry } from '../plugins'
import { UserLifecycleRef } from '../plugins/auth/api'
import { PasswordHasher } from '../plugins/auth/password'
import { createApiKey, createOrganization, createUser } from '../plugins/auth/service'
import { createService, type Service } from '../src/app'
import { loadConfig } from '../src/config'
import { queryText } from '../src/db'
import { createLogger, parseLevel } from '../src/log'

const CHROMIUM = '/usr/bin/chromium'
const OUT = 'docs/screenshots'
const PAGE_NAME = 'engineering'
const EMAIL = 'lead@example.com'
const PASSWORD = 'screenshots password'
const operator = { userId: null, apiKeyId: null, via: 'cli' as const, requestId: null }
const DAY_MS = 86_400_000

const ENGINEERS = [
  { username: 'achen', displayName: 'Alice Chen' },
  { username: 'bokafor', displayName: 'Ben Okafor' },
  { username: 'cmoreau', displayName: 'Chloé Moreau' },
  { username: 'dsingh', displayName: 'Dev Singh' },
  { username: 'eweber', displayName: 'Eva Weber' },
] as const

const LABELS = [
  { name: 'bug', color: '#dc2626' },
  { name: 'feature', color: '#2563eb' },
  { name: 'infra', color: '#7c3aed' },
  { name: 'security', color: '#ea580c' },
  { name: 'docs', color: '#16a34a' },
] as const

type Status = 'todo' | 'in_progress' | 'done' | 'cancelled'
type Label = (typeof LABELS)[number]['name']

/**
 * The 40 work items: title, status, priority (1 urgent … 4 low, 0 none), assignee (index into
 * ENGINEERS, or null), labels, and its history in days before now: created, started (in progress
 * or done), closed (done or cancelled).
 */
const ITEMS: Array<{ title: string; status: Status; priority: number; assignee: number | null; labels: Label[]; created: number; started?: number; closed?: number }> = [
  { title: 'Checkout fails for carts over 100 items', status: 'done', priority: 1, assignee: 0, labels: ['bug'], created: 27, started: 26, closed: 24 },
  { title: 'Move CI runners to the new cluster', status: 'done', priority: 2, assignee: 3, labels: ['infra'], created: 26, started: 22, closed: 13 },
  { title: 'Rotate the staging database credentials', status: 'done', priority: 2, assignee: 4, labels: ['security', 'infra'], created: 25, started: 20, closed: 12 },
  { title: 'Search results ignore archived projects filter', status: 'done', priority: 3, assignee: 1, labels: ['bug'], created: 24, started: 14, closed: 11 },
  { title: 'Bulk edit for work item priorities', status: 'done', priority: 3, assignee: 2, labels: ['feature'], created: 23, started: 15, closed: 9 },
  { title: 'Document the webhook retry policy', status: 'done', priority: 4, assignee: 2, labels: ['docs'], created: 22, started: 10, closed: 8 },
  { title: 'Rate limit the sign-in endpoint per IP', status: 'done', priority: 1, assignee: 4, labels: ['security'], created: 21, started: 12, closed: 10 },
  { title: 'Flaky test: push fan-out ordering', status: 'cancelled', priority: 3, assignee: 3, labels: ['bug'], created: 21, closed: 9 },
  { title: 'Upgrade PostgreSQL to 17 in production', status: 'in_progress', priority: 2, assignee: 3, labels: ['infra'], created: 20, started: 6 },
  { title: 'Saved views shared with a team', status: 'done', priority: 2, assignee: 0, labels: ['feature'], created: 19, started: 11, closed: 5 },
  { title: 'Dashboard tiles overlap at 390 px', status: 'done', priority: 3, assignee: 1, labels: ['bug'], created: 18, started: 9, closed: 7 },
  { title: 'Export work items as CSV', status: 'todo', priority: 4, assignee: null, labels: ['feature'], created: 18 },
  { title: 'Audit log retention setting', status: 'in_progress', priority: 3, assignee: 4, labels: ['security', 'feature'], created: 17, started: 4 },
  { title: 'Onboarding guide for new engineers', status: 'todo', priority: 0, assignee: 2, labels: ['docs'], created: 16 },
  { title: 'Memory leak in the live page stream', status: 'done', priority: 1, assignee: 0, labels: ['bug'], created: 15, started: 13, closed: 6 },
  { title: 'Alert when a dashboard source is suspended', status: 'todo', priority: 3, assignee: 1, labels: ['feature'], created: 14 },
  { title: 'Nightly backups to a second region', status: 'done', priority: 2, assignee: 3, labels: ['infra'], created: 13, started: 8, closed: 3 },
  { title: 'Due dates shown in the viewer’s time zone', status: 'in_progress', priority: 3, assignee: 2, labels: ['bug'], created: 13, started: 3 },
  { title: 'Keyboard shortcuts for the board', status: 'cancelled', priority: 4, assignee: null, labels: ['feature'], created: 12, closed: 4 },
  { title: 'Pin the base image digests', status: 'done', priority: 2, assignee: 4, labels: ['security', 'infra'], created: 12, started: 6, closed: 2 },
  { title: 'Slow project list for 10k items', status: 'in_progress', priority: 1, assignee: 0, labels: ['bug'], created: 11, started: 2 },
  { title: 'API reference: pagination examples', status: 'done', priority: 4, assignee: 2, labels: ['docs'], created: 10, started: 5, closed: 4 },
  { title: 'Mentions in work item comments', status: 'todo', priority: 2, assignee: 1, labels: ['feature'], created: 10 },
  { title: 'TLS certificate renewal runbook', status: 'todo', priority: 3, assignee: 3, labels: ['docs', 'infra'], created: 9 },
  { title: 'Session cookie missing SameSite on logout', status: 'done', priority: 1, assignee: 4, labels: ['security', 'bug'], created: 9, started: 8, closed: 7 },
  { title: 'Label colours in dark mode', status: 'in_progress', priority: 4, assignee: 1, labels: ['bug'], created: 8, started: 2 },
  { title: 'Project templates', status: 'todo', priority: 3, assignee: null, labels: ['feature'], created: 8 },
  { title: 'Cut the container image size in half', status: 'in_progress', priority: 3, assignee: 3, labels: ['infra'], created: 7, started: 1 },
  { title: 'Webhook deliveries stuck after a restart', status: 'done', priority: 1, assignee: 0, labels: ['bug'], created: 6, started: 6, closed: 1 },
  { title: 'Two-factor sign-in with passkeys', status: 'todo', priority: 2, assignee: 4, labels: ['security', 'feature'], created: 6 },
  { title: 'Cycle time on the team dashboard', status: 'in_progress', priority: 2, assignee: 2, labels: ['feature'], created: 5, started: 1 },
  { title: 'Changelog for release 2.4', status: 'todo', priority: 4, assignee: 2, labels: ['docs'], created: 5 },
  { title: 'Duplicate notifications on mobile', status: 'in_progress', priority: 1, assignee: 1, labels: ['bug'], created: 4, started: 1 },
  { title: 'Spike: move search to a dedicated index', status: 'cancelled', priority: 0, assignee: 3, labels: ['infra'], created: 4, closed: 1 },
  { title: 'Custom fields on the board cards', status: 'todo', priority: 3, assignee: 0, labels: ['feature'], created: 3 },
  { title: 'Dependency update: Elysia 1.5', status: 'todo', priority: 3, assignee: null, labels: ['infra', 'security'], created: 3 },
  { title: 'Share links expire after 30 days', status: 'todo', priority: 2, assignee: 4, labels: ['security', 'feature'], created: 2 },
  { title: 'Broken link in the MCP tutorial', status: 'done', priority: 4, assignee: 2, labels: ['docs', 'bug'], created: 2, started: 1, closed: 0 },
  { title: 'Import issues from another tracker', status: 'todo', priority: 0, assignee: null, labels: ['feature'], created: 1 },
  { title: 'Error budget report for Q3', status: 'todo', priority: 3, assignee: 3, labels: ['infra', 'docs'], created: 0 },
]

type ComponentType = 'horizontalBox' | 'verticalBox' | 'barChart' | 'lineChart' | 'pieChart'

/** The page's components: type, title, place on the 24-column grid, and source (`view`: the shared view "Open work"). */
const COMPONENTS: Array<{ type: ComponentType; title: string; x: number; y: number; width: number; height: number; measure: string; view?: boolean; days?: number }> = [
  { type: 'verticalBox', title: 'Open work', x: 0, y: 0, width: 6, height: 6, measure: 'count', view: true },
  { type: 'verticalBox', title: 'Cycle time (median)', x: 6, y: 0, width: 6, height: 6, measure: 'cycleTimeDays', days: 30 },
  { type: 'pieChart', title: 'Work by status', x: 12, y: 0, width: 12, height: 6, measure: 'byStatus' },
  { type: 'barChart', title: 'Open work by priority', x: 0, y: 6, width: 12, height: 6, measure: 'byPriority', view: true },
  { type: 'barChart', title: 'Open work by assignee', x: 12, y: 6, width: 12, height: 6, measure: 'byAssignee', view: true },
  { type: 'barChart', title: 'Created per day, last 14 days', x: 0, y: 12, width: 12, height: 6, measure: 'createdPerDay', days: 14 },
  { type: 'lineChart', title: 'Open work, last 30 days', x: 12, y: 12, width: 12, height: 6, measure: 'openOverTime', days: 30 },
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

/** Polls `read` until `accept` holds; fails after `ms` with the last value. */
async function until<T>(what: string, read: () => Promise<T>, accept: (value: T) => boolean, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await read()
    if (accept(value)) return value
    if (Date.now() > deadline) throw new Error(`${what}: not reached in ${ms} ms; last: ${JSON.stringify(value)}`)
    await Bun.sleep(50)
  }
}

async function seed(service: Service): Promise<void> {
  const { writes, db } = service.core
  const organization = await createOrganization(writes, operator, { name: 'Acme Engineering' })
  const hooks = service.core.services.get(UserLifecycleRef).createdHooks()
  const hasher = new PasswordHasher({ logN: 10, maxConcurrent: 2 })
  const person = (input: { username: string; displayName: string; email: string; role: string }) =>
    createUser(writes, operator, { organizationId: organization.id, password: PASSWORD, ...input }, { hasher, hooks }).then(({ user }) => user)
  // The lead administers the organization (labels are an administrator's), owns the project and the page.
  const lead = await person({ username: 'lead', displayName: 'Morgan Lead', email: EMAIL, role: 'administrator' })
  const engineers = []
  for (const engineer of ENGINEERS) engineers.push(await person({ ...engineer, email: `${engineer.username}@example.com`, role: 'member' }))
  const scopes = service.core.scopes.map((scope) => scope.name)
  const { secret: key } = await createApiKey(writes, operator, lead.id, { name: 'screenshots', scopes }, new Set(scopes))
  const v1 = async (method: string, path: string, body?: unknown) => (await call(service, method, path, { key, body })).data

  const project = await v1('POST', '/api/v1/projects', { name: 'Engineering', key: 'ENG' })
  for (const engineer of engineers) await v1('POST', `/api/v1/projects/${project.id}/members`, { userId: engineer.id, accessLevel: 'editor' })
  const labelIds = new Map<string, string>()
  for (const label of LABELS) labelIds.set(label.name, (await v1('POST', '/api/v1/labels', label)).id)

  // The work items, through API v1; then their history moved back (see the header).
  const now = Date.now()
  const at = (daysAgo: number, hour: number) => new Date(now - daysAgo * DAY_MS - hour * 3_600_000).toISOString()
  for (const [i, item] of ITEMS.entries()) {
    const made = await v1('POST', `/api/v1/projects/${project.id}/work-items`, {
      title: item.title,
      status: item.status,
      priority: item.priority,
      assigneeId: item.assignee === null ? null : engineers[item.assignee]!.id,
      labels: item.labels.map((name) => labelIds.get(name)!),
    })
    // Hours within the day vary with the item, so that same-day events keep their order: created, started, closed.
    await queryText(db, `update work_items set created_at = $3, started_at = $4, closed_at = $5 where id = $1 and organization_id = $2`, [
      made.id,
      organization.id,
      at(item.created, 3 + (i % 4)),
      item.started === undefined ? null : at(item.started, 2 + (i % 2)),
      item.closed === undefined ? null : at(item.closed, 1),
    ])
  }

  const view = await v1('POST', `/api/v1/projects/${project.id}/views`, { name: 'Open work', filters: { status: 'todo,in_progress' }, shared: true })
  const page = await v1('POST', '/api/v1/pages', { name: PAGE_NAME, title: 'Engineering' })
  const ids: string[] = []
  for (const component of COMPONENTS) {
    const { id } = await v1('POST', `/api/v1/pages/${page.id}/components`, { type: component.type, title: component.title, x: component.x, y: component.y, width: component.width, height: component.height })
    await v1('PUT', `/api/v1/pages/${page.id}/components/${id}/source`, {
      projectId: project.id,
      measure: component.measure,
      ...(component.view ? { viewId: view.id } : {}),
      ...(component.days ? { range: { days: component.days } } : {}),
    })
    ids.push(id)
  }
  // Every source computed once, every component drawn from its data.
  for (const id of ids) {
    await until(`the source of ${id}`, () => v1('GET', `/api/v1/pages/${page.id}/components/${id}/source`), (source) => source.state === 'active' && source.computedAt !== null)
    await until(`the data of ${id}`, () => v1('GET', `/api/v1/pages/${page.id}/components/${id}`), (component) => component.data !== null)
  }
}

async function shoot(browser: Browser, base: string, storageState: BrowserContextOptions['storageState'], file: string, options: { context: BrowserContextOptions; query?: string; fullPage: boolean }) {
  const context = await browser.newContext({ ...options.context, storageState })
  const page = await context.newPage()
  await page.goto(`${base}/pages/${PAGE_NAME}${options.query ?? ''}`)
  await page.waitForFunction(() => document.querySelector('[data-status]')?.textContent === 'live')
  // Every cell drawn from data (none "No data yet").
  await page.waitForFunction(() => document.querySelectorAll('section.component').length > 0 && !document.querySelector('section.component svg.empty'))
  // Let fonts, layout and the kiosk fit settle (two frames after the last change).
  await page.evaluate(() => document.fonts.ready.then(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))))
  await page.screenshot({ path: `${OUT}/${file}`, fullPage: options.fullPage })
  await context.close()
  console.log(`${OUT}/${file}`)
}

async function main(): Promise<void> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is not installed (Debian's chromium package)`)
  const config = loadConfig(registry, { raw: { auth: { passwordHashLogN: 10 } }, env: { DATABASE_URL: 'pglite://memory' } })
  const service = await createService({ registry, config, log: createLogger(parseLevel(process.env.LOG_LEVEL ?? 'error')) })
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

    await shoot(browser, base, storageState, 'work-dashboard-1280.png', { context: { viewport: { width: 1280, height: 800 } }, fullPage: true })
    await shoot(browser, base, storageState, 'work-dashboard-kiosk-1920.png', { context: { viewport: { width: 1920, height: 1080 } }, query: '?kiosk=1', fullPage: false })
  } finally {
    await browser?.close()
    server.stop(true)
    await service.stop()
  }
}

await main()
process.exit(0)
