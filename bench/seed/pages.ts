/**
 * The two live pages of the pages benchmark, made through API v1 and fed through
 * `POST /api/component` on a running service: one line chart, and 20 components of all five
 * types (placed by the API's defaults), with the data each one shows; and a sign-in through the
 * form for the `wt_session` cookie the pages are read with.
 */

export const PASSWORD = 'bench password'

type ComponentType = 'horizontalBox' | 'verticalBox' | 'barChart' | 'lineChart' | 'pieChart'
export interface PageComponent {
  type: ComponentType
  title: string
  data: Record<string, unknown>
}

const text = (value: string, size: number, color: string) => ({ value, size, color })
const horizontal = (title: string, left: string, middle: string, right: string, rightColor = '#4ade80'): PageComponent => ({
  type: 'horizontalBox',
  title,
  data: { type: 'horizontalBox', backgroundColor: '#1e293b', leftText: text(left, 18, '#f8fafc'), middleText: text(middle, 32, '#38bdf8'), rightText: text(right, 18, rightColor) },
})
const vertical = (title: string, top: string, bottom: string, background = '#fff7ed', color = '#ea580c'): PageComponent => ({
  type: 'verticalBox',
  title,
  data: { type: 'verticalBox', backgroundColor: background, topText: text(top, 16, '#334155'), bottomText: text(bottom, 28, color) },
})
/** A deterministic wave around `base` (no randomness: every run posts the same data). */
const wave = (count: number, base: number, swing: number, step = 0.7) => Array.from({ length: count }, (_, i) => Math.round((base + swing * Math.sin(i * step) + (swing / 3) * Math.cos(i * 1.9)) * 10) / 10)
const bars = (title: string, labels: string[], values: number[], color: string): PageComponent => ({
  type: 'barChart',
  title,
  data: { type: 'barChart', backgroundColor: '#f8fafc', xNumber: false, height: 220, points: labels.map((x, i) => ({ x, y: values[i]!, color })) },
})
const line = (title: string, values: number[], color: string, fill: string, xNumber = true): PageComponent => ({
  type: 'lineChart',
  title,
  data: {
    type: 'lineChart',
    backgroundColor: '#ecfeff',
    cubic: true,
    xNumber,
    fillColor: fill,
    height: 200,
    points: values.map((y, i) => ({ x: xNumber ? String(i) : `${String(i).padStart(2, '0')}:00`, y, color })),
  },
})
const pie = (title: string, slices: Array<[string, number, string]>): PageComponent => ({
  type: 'pieChart',
  title,
  data: { type: 'pieChart', backgroundColor: '#fefce8', height: 240, points: slices.map(([x, y, color]) => ({ x, y, color })) },
})

const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun']
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
const HOURS = Array.from({ length: 24 }, (_, i) => `${String(i).padStart(2, '0')}h`)

/** The single component of the small page: a 24-point line chart (response time p95 over a day). */
export const SINGLE: PageComponent = line('Response time p95 (ms), last 24 h', wave(24, 180, 60), '#0e7490', '#67e8f9', false)

/** The 20 components of the large page: four of each type, charts of 7 to 30 points. */
export const WALL: PageComponent[] = [
  horizontal('Orders today', 'Orders', '1,204', '+4%'),
  horizontal('Revenue today', 'Revenue', '$48.2k', '+2.1%'),
  vertical('Uptime', 'Uptime', '99.98%'),
  vertical('Error rate', 'Errors', '0.12%', '#fef2f2', '#dc2626'),
  vertical('Deploys', 'Deploys', '14', '#f0fdf4', '#16a34a'),
  vertical('Queue depth', 'Queue', '82', '#eff6ff', '#2563eb'),
  bars('Deployments per weekday', WEEKDAYS, [12, 19, 15, 22, 9, 2, 1], '#2563eb'),
  SINGLE,
  pie('Work items', [
    ['Done', 58, '#16a34a'],
    ['In progress', 27, ''],
    ['Todo', 15, '#94a3b8'],
  ]),
  bars('Work items closed per month', MONTHS, wave(12, 140, 35), '#7c3aed'),
  line('CPU %, last 30 min', wave(30, 42, 18, 0.4), '#b45309', '#fde68a'),
  pie('Traffic sources', [
    ['Direct', 41, '#2563eb'],
    ['Search', 28, '#16a34a'],
    ['Social', 14, '#db2777'],
    ['Referral', 11, '#f59e0b'],
    ['Email', 6, '#64748b'],
  ]),
  bars('Builds per hour', HOURS, wave(24, 30, 20, 0.5), '#0891b2'),
  line('Orders per day, last 30 days', wave(30, 1100, 250, 0.3), '#1d4ed8', '#bfdbfe'),
  pie('Browsers', [
    ['Chrome', 63, '#4e79a7'],
    ['Safari', 19, '#f28e2b'],
    ['Firefox', 8, '#e15759'],
    ['Edge', 6, '#76b7b2'],
    ['Other', 4, ''],
  ]),
  bars('Incidents per month', MONTHS, [3, 1, 4, 2, 0, 5, 2, 1, 3, 2, 1, 0], '#dc2626'),
  line('Memory MiB, last 24 h', wave(24, 620, 90, 0.35), '#6d28d9', '#ddd6fe'),
  pie('Plans', [
    ['Free', 1200, '#94a3b8'],
    ['Team', 430, '#2563eb'],
    ['Business', 120, '#7c3aed'],
    ['Enterprise', 18, '#0f172a'],
  ]),
  horizontal('Open work items', 'Open', '37', '−5', '#f87171'),
  horizontal('Signups today', 'Signups', '312', '+11%'),
]

/** API v1 with the bench key; fails on anything but 2xx. */
async function v1(base: string, secret: string, method: string, path: string, body?: unknown): Promise<{ id: string; name: string }> {
  const response = await fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await response.text()
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`)
  return (JSON.parse(text) as { data: { id: string; name: string } }).data
}

let timestamp = 1_800_000_000

/** A page with `components`, placed by the API's defaults (no x/y/width/height), each fed once. */
export async function createPage(base: string, secret: string, displayKey: string, name: string, title: string, components: PageComponent[]): Promise<void> {
  const page = await v1(base, secret, 'POST', '/api/v1/pages', { name, title })
  for (const component of components) {
    const { id } = await v1(base, secret, 'POST', `/api/v1/pages/${page.id}/components`, { type: component.type, title: component.title })
    const response = await fetch(`${base}/api/component`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ componentId: id, apiKey: displayKey, timestamp: ++timestamp, data: component.data }),
    })
    if (response.status !== 200) throw new Error(`POST /api/component (${component.type}) answered ${response.status}: ${await response.text()}`)
  }
}

/** The `name=value` of a Set-Cookie named `name` among a response's cookies. */
function cookieOf(response: Response, name: string): string {
  const found = response.headers.getSetCookie().find((cookie) => cookie.startsWith(`${name}=`))
  if (!found) throw new Error(`${response.url} set no ${name} cookie (status ${response.status})`)
  return found.split(';')[0]!
}

/** Signs in through the form (GET for the CSRF cookie and field, POST form-encoded): the `wt_session=…` cookie. */
export async function signIn(base: string, email: string): Promise<string> {
  const form = await fetch(`${base}/account/sign-in`)
  const signInCookie = cookieOf(form, 'wt_signin')
  const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1]
  if (!csrf) throw new Error('the sign-in form has no csrf field')
  const answer = await fetch(`${base}/account/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: signInCookie },
    body: new URLSearchParams({ email, password: PASSWORD, csrf }).toString(),
  })
  if (answer.status !== 303) throw new Error(`sign-in answered ${answer.status}: ${await answer.text()}`)
  return cookieOf(answer, 'wt_session')
}

