/**
 * Live dashboards: `GET /pages/{pageName}` (and a share link's `/s/{token}`) assembles the page
 * from SVG fragments cached per component version (fragments.ts), reading component data only
 * for fragments it lacks; `GET /pages` lists the pages a user can see; `GET /api/pages/{pageName}`
 * gives mobile apps the components as JSON. The page's script (live-client.ts) keeps it live.
 */
import { sql } from 'drizzle-orm'
import type { Database } from '../../../src/db'
import { html, htmlResponse, PAGE_HEADERS, trusted, type Html } from '../../../src/http/html'
import type { Principal } from '../../../src/services/identity'
import { isoFromText } from '../../../src/sql'
import { compileStatement, runStatement } from '../../../src/statements'
import { PAGE_NAME_PATTERN } from '../model'
import { ACTOR, actorValues, MAY_USE_PAGE } from '../pages/access'
import { spanOf } from '../pages/layout'
import { COMPONENT_COLUMNS, FROM_PAGE_COMPONENTS, fromComponentText, type ComponentTextRow, type VisiblePage } from '../pages/service'
import { LIVE_CSS_VERSION, LIVE_JS_VERSION } from './client'
import type { FragmentCache } from './fragments'

const LIVE_HEADERS = { ...PAGE_HEADERS, 'content-security-policy': PAGE_HEADERS['content-security-policy']!.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'") }

const PAGE_NAME = new RegExp(PAGE_NAME_PATTERN)

/** The caller's values of ACTOR. */
const viewerValues = (principal: Principal) => actorValues({ userId: principal.user.id, organizationId: principal.user.organizationId, role: principal.user.role })

/** The page named `name` (any case) in the actor's organization, if the actor may see it. */
const VISIBLE_PAGE_BY_NAME = compileStatement(
  sql`select p.id, p.name, p.title from pages p, ${ACTOR} where lower(p.name) = lower(${sql.placeholder('name')}) and p.organization_id = ${sql.placeholder('organization')} and ${MAY_USE_PAGE}`,
)
/** Every component of the page `page` of `organization`, with its data, in grid order. */
const PAGE_COMPONENTS = compileStatement(sql`select ${COMPONENT_COLUMNS} ${FROM_PAGE_COMPONENTS}`)

/** The page named `name` in the user's organization, if they may see it. */
export async function findVisiblePage(db: Database, principal: Principal, name: string): Promise<VisiblePage | undefined> {
  // No page has a name outside the pattern; such a name (`%00` is U+0000, which text cannot hold) is never sent to SQL.
  if (!PAGE_NAME.test(name)) return undefined
  const [page] = await runStatement<VisiblePage>(db, VISIBLE_PAGE_BY_NAME, { ...viewerValues(principal), name })
  return page
}

/** Every component of a page of `organizationId` with its data, in grid order (the JSON twin of the live page). */
export async function pageComponents(db: Database, organizationId: string, pageId: string) {
  const rows = await runStatement<ComponentTextRow>(db, PAGE_COMPONENTS, { page: pageId, organization: organizationId })
  return rows.map(fromComponentText)
}

/** A page of the index: what a user can see, with its last change (page or any component). */
export interface IndexedPage {
  name: string
  title: string | null
  components: number
  updatedAt: string
}

/** The index lists at most this many pages (most recently changed first). */
export const INDEX_LIMIT = 500

/** The pages the actor can see with their component counts and last change, most recently changed first (one more than the index shows). */
const VISIBLE_PAGES = compileStatement(sql`select p.name, p.title, count(c.id) as components, greatest(p.updated_at, max(c.updated_at)) as "updatedAt"
      from ${ACTOR} join pages p on ${MAY_USE_PAGE} left join components c on c.page_id = p.id and c.organization_id = p.organization_id
      group by p.id, p.organization_id order by "updatedAt" desc, p.name limit ${sql.raw(String(INDEX_LIMIT + 1))}`)

/** The pages the user can see, most recently changed first: one statement. */
export async function visiblePages(db: Database, principal: Principal): Promise<IndexedPage[]> {
  const rows = await runStatement<IndexedPage & { components: string | number }>(db, VISIBLE_PAGES, viewerValues(principal))
  return rows.map((row) => ({ ...row, components: Number(row.components), updatedAt: isoFromText(row.updatedAt) }))
}

/** What a cell needs besides its SVG: placement, title and the version its fragment is cached under. */
export interface ComponentCell {
  id: string
  type: string
  title: string | null
  /** What feeds it, when a plugin does (`ENG · open bugs`): small, under the title. */
  feedLabel?: string | null
  x: number
  y: number
  width: number
  height: number
  version: number
}

/** A cell of the live page: its component, its opening markup (placement and title), its SVG fragment (UTF-8, shared with the cache) and its closing. */
export interface Cell {
  id: string
  open: string
  svg: Uint8Array
  close: string
}

const CELL_CLOSE = `
  </section>`

/** The opening of a component's cell: placed on the 24-column grid (layout.ts), with its title. */
function cellOpening(component: ComponentCell): string {
  return html`<section class="component" id="component-${component.id}" data-component="${component.id}" data-type="${component.type}" data-version="${component.version}"
    data-x="${component.x}" data-y="${component.y}" style="grid-column: ${Math.min(component.x, 23) + 1} / span ${spanOf(component)}; grid-row: ${component.y + 1} / span ${component.height}">
    ${component.title || component.feedLabel ? html`<h2>${component.title ?? ''}${component.feedLabel ? html`<small class="source">${component.feedLabel}</small>` : ''}</h2>` : ''}
    `.value
}

/** One component's cell: its title and SVG (a cached fragment), placed on the 24-column grid (layout.ts). */
export function componentCell(component: ComponentCell, svg: string): string {
  return cellOpening(component) + svg + CELL_CLOSE
}

const decoder = new TextDecoder()
/** A cell as one string (what componentCell gives for the same component and fragment). */
export const cellHtml = (cell: Cell) => cell.open + decoder.decode(cell.svg) + cell.close

const CELL_COLUMNS = sql`c.id, c.type, c.title, c.feed_label as "feedLabel", c.x, c.y, c.width, c.height, c.version`
/** The cells of the page `page` of `organization`, in grid order. */
const PAGE_CELLS = compileStatement(sql`select ${CELL_COLUMNS} ${FROM_PAGE_COMPONENTS}`)
/** The cells of the page `page` of `organization` among `componentIds`, with their data. */
const CELL_DATA = compileStatement(
  sql`select ${CELL_COLUMNS}, c.data from components c where c.page_id = ${sql.placeholder('page')} and c.organization_id = ${sql.placeholder('organization')} and c.id = any(${sql.placeholder('componentIds')}::uuid[])`,
)

/** Components whose data is read in one statement: a page's data is never all in memory at once (a chart's data can be ~1 MB). */
const DATA_BATCH = 10

type DataRow = ComponentCell & { data: Record<string, unknown> | null }

/**
 * The cells of a page: one statement for the placements and versions, then the data of the
 * components whose fragment is neither cached nor being drawn for another request, a few
 * components a statement. A cached fragment is taken when it is found (another render may evict
 * it a moment later); a missing one is drawn from the row read with its data, whose version it is
 * cached under, so no chart is ever drawn or cached without its data. A component deleted in
 * between is left out. Every statement names the page's organization (one shard on Citus).
 */
export async function pageCells(db: Database, fragments: FragmentCache, organizationId: string, pageId: string): Promise<Cell[]> {
  const components = await runStatement<ComponentCell>(db, PAGE_CELLS, { page: pageId, organization: organizationId })
  const cells: Array<Cell | Promise<Cell | undefined> | undefined> = components.map((component) => {
    const svg = fragments.cached(component)
    return svg === undefined ? fragments.underWay<Cell | undefined>(component) : { id: component.id, open: cellOpening(component), svg, close: CELL_CLOSE }
  })
  const missing = components.flatMap((_, i) => (cells[i] === undefined ? [i] : []))
  // Every missing fragment is claimed at once (other requests await it), then read one batch after another.
  let previous: Promise<unknown> = Promise.resolve()
  for (let start = 0; start < missing.length; start += DATA_BATCH) {
    const batch = missing.slice(start, start + DATA_BATCH)
    const rows = previous.then(() => runStatement<DataRow>(db, CELL_DATA, { page: pageId, organization: organizationId, componentIds: batch.map((i) => components[i]!.id) }))
    const drawn = rows.then((found) => {
      const byId = new Map(found.map((row) => [row.id, row]))
      return batch.map((i): Cell | undefined => {
        const row = byId.get(components[i]!.id)
        return row && { id: row.id, open: cellOpening(row), svg: fragments.fragment(row, () => row.data), close: CELL_CLOSE }
      })
    })
    for (const [j, i] of batch.entries()) cells[i] = fragments.drawUnderWay(components[i]!, drawn.then((cells) => cells[j]))
    // The next batch is read once this one is drawn: one batch of data in memory at a time.
    previous = drawn
  }
  return (await Promise.all(cells)).filter((cell): cell is Cell => cell !== undefined)
}

/** How a live page is shown: signed in, or through a share link (read-only, no account chrome); `kiosk` hides everything but the components. */
export interface LiveView {
  events: string
  kiosk: boolean
  shared: boolean
  /** Scripts other plugins add to a signed-in view (LivePageExtensions), same-origin paths. */
  scripts?: readonly string[]
  /** Marks other plugins put on components (LivePageExtensions): each marked component's markup, placed after its title. */
  marks?: ReadonlyMap<string, string>
}

const head = (title: string) => html`<meta charset="utf-8" />
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <title>${title}</title>
  <link rel="icon" href="/favicon.ico" />
  <link rel="stylesheet" href="/pages/assets/live.css?v=${LIVE_CSS_VERSION}" />`

/**
 * The live page, streamed: its head, then each cell as the client takes it. A page of large charts
 * is several MiB; its cells are the cached fragments themselves, so a view holds a cell at a time
 * (encoded as it is sent), not a copy of the page.
 */
export function livePage(page: VisiblePage, cells: Cell[], view: LiveView): Response {
  const title = page.title ?? page.name
  const nav = view.shared ? html`<span class="shared">Shared view · read-only</span>` : html`<a href="/pages">All dashboards</a>`
  const opening = html`<!doctype html>
<html lang="en">
<head>
  ${head(title)}
  <script src="/pages/assets/live.js?v=${LIVE_JS_VERSION}" defer></script>
  ${(view.scripts ?? []).map((src) => html`<script src="${src}" defer></script>`)}
</head>
<body class="live${view.kiosk ? ' kiosk' : ''}" data-events="${view.events}" data-page="${page.name}"${view.shared ? trusted(' data-shared') : ''}>
  <header><h1 data-title>${title}</h1><span class="status" data-status role="status">connecting…</span><nav>${nav}</nav></header>
  <main class="grid" data-grid>`
  const closing = html`</main>
  <p class="empty-page" data-empty${cells.length ? trusted(' hidden') : ''}>No components on this page yet.</p>
</body>
</html>`
  const marks = view.marks ?? new Map<string, string>()
  const parts: Array<string | Uint8Array> = [opening.value, ...cells.flatMap((cell) => [cell.open + (marks.get(cell.id) ?? ''), cell.svg, cell.close]), closing.value]
  const encoder = new TextEncoder()
  let next = 0
  const body = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        // A cell's fragment is sent as cached; the small markup between fragments is encoded as it goes.
        let text = ''
        while (next < parts.length && typeof parts[next] === 'string') text += parts[next++]
        if (text) controller.enqueue(encoder.encode(text))
        else if (next < parts.length) controller.enqueue(parts[next++] as Uint8Array)
        if (next >= parts.length) controller.close()
      },
    },
    { highWaterMark: 0 },
  )
  return new Response(body, { status: 200, headers: view.shared ? { ...LIVE_HEADERS, 'referrer-policy': 'no-referrer', 'x-robots-tag': 'noindex, nofollow' } : LIVE_HEADERS })
}

/**
 * A page in the dashboards' look that says why there is nothing to show (a missing page, too many
 * views of shared pages): its title, the reason and, for a signed-in view, the way to the dashboards.
 */
export function messagePage(title: string, message: string, status: number, options: { shared?: boolean; headers?: Record<string, string> } = {}): Response {
  return htmlResponse(
    html`<html lang="en">
<head>
  ${head(title)}
</head>
<body class="index">
  <header><h1>${title}</h1>${options.shared ? '' : html`<nav><a href="/pages">All dashboards</a></nav>`}</header>
  <main><p>${message}</p></main>
</body>
</html>`,
    status,
    options.headers,
  )
}

const dateTime = (iso: string) => iso.slice(0, 16).replace('T', ' ') + ' UTC'

/** `GET /pages`: the dashboards the user can see, most recently changed first. */
export function pageIndex(pages: IndexedPage[], user: { displayName: string }): Response {
  const shown = pages.slice(0, INDEX_LIMIT)
  const rows: Html[] = shown.map(
    (page) => html`<li><a href="/pages/${encodeURIComponent(page.name)}"><strong>${page.title ?? page.name}</strong></a>
      <span class="meta">${page.name} · ${page.components === 1 ? '1 component' : `${page.components} components`} · updated <time datetime="${page.updatedAt}">${dateTime(page.updatedAt)}</time></span></li>`,
  )
  return htmlResponse(
    html`<html lang="en">
<head>
  ${head('Dashboards')}
</head>
<body class="index">
  <header><h1>Dashboards</h1><nav><span>${user.displayName}</span> · <a href="/account">Account</a></nav></header>
  <main>
    ${
      rows.length
        ? html`<ul class="pages">${rows}</ul>${pages.length > INDEX_LIMIT ? html`<p class="meta">Showing the ${INDEX_LIMIT} most recently changed; API v1 <code>GET /api/v1/pages</code> lists them all.</p>` : ''}`
        : html`<p>No dashboards you can see yet. Create one with <code>POST /api/v1/pages</code>, or ask its creator for access.</p>`
    }
  </main>
</body>
</html>`,
  )
}
