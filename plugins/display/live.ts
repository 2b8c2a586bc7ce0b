/**
 * Live dashboards: `GET /pages/{pageName}` renders every component as SVG on the server;
 * `GET /pages/{pageName}/events` streams updates (server-sent events) that arrive from any
 * instance through NOTIFY; `GET /api/pages/{pageName}` gives mobile apps the same as JSON.
 */
import { queryText, type Database } from '../../src/db'
import { html, htmlResponse, PAGE_HEADERS, type Html } from '../../src/http/html'
import { describeError, type Logger } from '../../src/log'
import type { Principal } from '../../src/services/auth'
import { PAGE_NAME_PATTERN } from './model'
import { COMPONENT_COLUMNS, FROM_PAGE_COMPONENTS, fromComponentText, type ComponentTextRow } from './pages-service'
import { renderComponent } from './render'
import { ACTOR, MAY_USE_PAGE } from './schema'

const LIVE_HEADERS = { ...PAGE_HEADERS, 'content-security-policy': PAGE_HEADERS['content-security-policy']!.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'") }

interface VisiblePage {
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

export async function pageComponents(db: Database, pageId: string) {
  const rows = await queryText<ComponentTextRow>(db, `select ${COMPONENT_COLUMNS} ${FROM_PAGE_COMPONENTS}`, [pageId])
  return rows.map(fromComponentText)
}

type ComponentView = ReturnType<typeof fromComponentText>

/** One component's cell: its title and SVG, placed on the 24-column grid. */
function componentCell(component: ComponentView): Html {
  return html`<section class="component" id="component-${component.id}" data-component="${component.id}" data-type="${component.type}"
    style="grid-column: ${component.x + 1} / span ${component.width}; grid-row: ${component.y + 1}">
    ${component.title ? html`<h2>${component.title}</h2>` : ''}
    ${renderComponent(component.type, component.data as never)}
  </section>`
}

export function livePage(page: VisiblePage, components: ComponentView[]): Response {
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
  <main class="grid">${components.map(componentCell)}</main>
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
source.addEventListener('error', () => { status.textContent = 'reconnecting…' })
source.addEventListener('component', (event) => {
  const update = JSON.parse(event.data)
  const cell = document.getElementById('component-' + update.id)
  if (cell) cell.outerHTML = update.html
})
`

interface Listener {
  pageId: string
  send(event: string, data: unknown): void
}

/**
 * Server-sent event streams of this instance, by page. An update notified by any instance is
 * read once here and pushed to every local viewer of its page.
 */
export class LiveStreams {
  private readonly listeners = new Set<Listener>()

  constructor(
    private readonly db: Database,
    private readonly log: Logger,
  ) {}

  /** Handles one NOTIFY: `{pageId, componentId}`. */
  async publish(event: { pageId: string; componentId: string }): Promise<void> {
    const audience = [...this.listeners].filter((listener) => listener.pageId === event.pageId)
    if (!audience.length) return
    try {
      const [row] = await queryText<ComponentTextRow>(this.db, `select ${COMPONENT_COLUMNS} from components c where c.id = $1`, [event.componentId])
      if (!row) return
      const component = fromComponentText(row)
      const update = { id: component.id, type: component.type, timestamp: component.timestamp, data: component.data, html: componentCell(component).value }
      for (const listener of audience) listener.send('component', update)
    } catch (error) {
      this.log.warn('could not push a live update', describeError(error))
    }
  }

  /** A `text/event-stream` response that lives until the viewer goes away. */
  open(pageId: string, signal: AbortSignal): Response {
    const encoder = new TextEncoder()
    let listener: Listener | undefined
    let heartbeat: ReturnType<typeof setInterval> | undefined
    const close = () => {
      if (listener) this.listeners.delete(listener)
      clearInterval(heartbeat)
    }
    const stream = new ReadableStream<Uint8Array>({
      start: (controller) => {
        const write = (text: string) => {
          try {
            controller.enqueue(encoder.encode(text))
          } catch {
            close()
          }
        }
        listener = { pageId, send: (event, data) => write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`) }
        this.listeners.add(listener)
        write('retry: 2000\n: connected\n\n')
        heartbeat = setInterval(() => write(': keep-alive\n\n'), 15_000)
        signal.addEventListener('abort', () => {
          close()
          try {
            controller.close()
          } catch {
            // already closed
          }
        })
      },
      cancel: close,
    })
    return new Response(stream, {
      headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no' },
    })
  }

  /** Ends every stream (shutdown). */
  closeAll(): void {
    this.listeners.clear()
  }
}
