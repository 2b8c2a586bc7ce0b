/**
 * Live dashboards: `GET /pages/{pageName}` assembles the page from SVG fragments cached per
 * component version (fragments.ts), reading component data only for fragments it lacks;
 * `GET /api/pages/{pageName}` gives mobile apps the components as JSON.
 */
import { queryText, type Database } from '../../src/db'
import { html, htmlResponse, PAGE_HEADERS, trusted } from '../../src/http/html'
import type { Principal } from '../../src/services/identity'
import type { FragmentCache } from './fragments'
import { PAGE_NAME_PATTERN } from './model'
import { COMPONENT_COLUMNS, FROM_PAGE_COMPONENTS, fromComponentText } from './pages-service'
import { ACTOR, MAY_USE_PAGE } from './page-access'

const LIVE_HEADERS = { ...PAGE_HEADERS, 'content-security-policy': PAGE_HEADERS['content-security-policy']!.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'") }

export interface VisiblePage {
  id: string
  name: string
  title: string | null
}

const PAGE_NAME = new RegExp(PAGE_NAME_PATTERN)

/** The page named `name` in the user's organization, if they may see it. */
export async function findVisiblePage(db: Database, principal: Principal, name: string): Promise<VisiblePage | undefined> {
  // No page has a name outside the pattern; such a name (`%00` is U+0000, which text cannot hold) is never sent to SQL.
  if (!PAGE_NAME.test(name)) return undefined
  const [page] = await queryText<VisiblePage>(
    db,
    `select p.id, p.name, p.title from pages p, ${ACTOR} where lower(p.name) = lower($4) and ${MAY_USE_PAGE}`,
    [principal.user.id, principal.user.organizationId, principal.user.role, name],
  )
  return page
}

/** Every component of a page with its data, in grid order (the JSON twin of the live page). */
export async function pageComponents(db: Database, pageId: string) {
  const rows = await queryText<Parameters<typeof fromComponentText>[0]>(db, `select ${COMPONENT_COLUMNS} ${FROM_PAGE_COMPONENTS}`, [pageId])
  return rows.map(fromComponentText)
}

/** What a cell needs besides its SVG: placement, title and the version its fragment is cached under. */
export interface ComponentCell {
  id: string
  type: string
  title: string | null
  x: number
  y: number
  width: number
  version: number
}

/** One component's cell: its title and SVG (a cached fragment), placed on the 24-column grid. */
export function componentCell(component: ComponentCell, svg: string): string {
  return html`<section class="component" id="component-${component.id}" data-component="${component.id}" data-type="${component.type}"
    style="grid-column: ${component.x + 1} / span ${component.width}; grid-row: ${component.y + 1}">
    ${component.title ? html`<h2>${component.title}</h2>` : ''}
    ${trusted(svg)}
  </section>`.value
}

/**
 * The cells of a page: one statement for the placements and versions, and a second one only for
 * the data of components whose fragment at that version is not cached.
 */
export async function pageCells(db: Database, fragments: FragmentCache, pageId: string): Promise<string[]> {
  const components = await queryText<ComponentCell>(db, `select c.id, c.type, c.title, c.x, c.y, c.width, c.version ${FROM_PAGE_COMPONENTS}`, [pageId])
  const missing = components.filter((component) => !fragments.has(component)).map((component) => component.id)
  const data = new Map<string, Record<string, unknown> | null>()
  if (missing.length)
    for (const row of await queryText<{ id: string; data: Record<string, unknown> | null }>(db, 'select id, data from components where id = any($1::uuid[])', [missing]))
      data.set(row.id, row.data)
  return components.map((component) => componentCell(component, fragments.svg(component, () => data.get(component.id) ?? null)))
}

export function livePage(page: VisiblePage, cells: string[]): Response {
  return htmlResponse(
    html`<html lang="en">
<head>
  <meta charset="utf-8" />
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <title>${page.title ?? page.name}</title>
  <link rel="stylesheet" href="/pages/assets/live.css" />
  <script src="/pages/assets/live.js" defer></script>
</head>
<body data-events="/pages/${encodeURIComponent(page.name)}/events">
  <header><h1>${page.title ?? page.name}</h1><span class="status" data-status>connecting…</span></header>
  <main class="grid">${trusted(cells.join(''))}</main>
</body>
</html>`,
    200,
    LIVE_HEADERS,
  )
}

export const LIVE_CSS = `
:root { color-scheme: light dark; }
body { margin: 0; font: 15px/1.4 system-ui, sans-serif; }
header { display: flex; align-items: baseline; gap: 1rem; padding: .75rem 1.5rem; }
header h1 { margin: 0; font-size: 1.3rem; }
.status { color: #888; font-size: .85rem; }
.grid { display: grid; grid-template-columns: repeat(24, 1fr); grid-auto-rows: auto; align-items: start; gap: 12px; padding: 0 1.5rem 1.5rem; }
.component { min-width: 0; }
.component h2 { font-size: .95rem; margin: 0 0 .25rem; }
.component-svg { width: 100%; height: auto; display: block; }
`

export const LIVE_JS = `
const source = new EventSource(document.body.dataset.events)
const status = document.querySelector('[data-status]')
source.addEventListener('open', () => { status.textContent = 'live' })
source.addEventListener('error', () => { if (source.readyState !== EventSource.CLOSED) status.textContent = 'reconnecting…' })
source.addEventListener('component', (event) => {
  const update = JSON.parse(event.data)
  const cell = document.getElementById('component-' + update.id)
  if (cell) cell.outerHTML = update.html
})
source.addEventListener('end', (event) => {
  source.close()
  status.textContent = JSON.parse(event.data).reason
})
`
