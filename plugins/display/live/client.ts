/**
 * The live page's stylesheet and script, served as files (the pages allow no inline script).
 * The script keeps the page live: component cells replaced, added and removed as their events
 * arrive, their marks (an alert firing) kept and replaced, the title kept, a lost or silent stream
 * reconnected and the page resynchronised from a fresh copy of itself. Kiosk mode is CSS alone:
 * the grid is the screen and drawings fit their cells.
 */
import { createHash } from 'node:crypto'
import { CHART_CSS } from '../charts/render'
import { GRID_COLUMNS, ROW_PX } from '../pages/layout'

/** In dark mode, the card and the text of a component whose background is light (`data-tone="light"`). */
export const LIGHT_TONE_CARD = '#f8fafc'
export const LIGHT_TONE_TEXT = '#0f172a'

export const LIVE_CSS = `
:root { color-scheme: light dark; --bg: #f1f5f9; --fg: #0f172a; --muted: #64748b; --card: #ffffff; --border: #e2e8f0; --accent: #2563eb; --warn: #b45309; --bad: #b91c1c; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0b1220; --fg: #e2e8f0; --muted: #94a3b8; --card: #111827; --border: #1f2937; --accent: #93c5fd; --warn: #fbbf24; --bad: #fca5a5; }
  /* A component on a light background (data-tone, by its luminance) keeps a light card and dark text: no white slab under light text. */
  .component:has(> .component-svg[data-tone=light]) { background: ${LIGHT_TONE_CARD}; border-color: #cbd5e1; color: ${LIGHT_TONE_TEXT}; }
}
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.4 system-ui, sans-serif; background: var(--bg); color: var(--fg); }
a { color: var(--accent); }
header { display: flex; align-items: baseline; flex-wrap: wrap; gap: .25rem 1rem; padding: .75rem 1.5rem; }
header h1 { margin: 0; font-size: 1.3rem; overflow-wrap: anywhere; }
header nav { margin-left: auto; font-size: .9rem; color: var(--muted); }
.status { color: var(--muted); font-size: .85rem; }
body[data-state=reconnecting] .status { color: var(--warn); }
body[data-state=ended] .status { color: var(--bad); font-weight: 600; }
.grid { display: grid; grid-template-columns: repeat(${GRID_COLUMNS}, minmax(0, 1fr)); grid-auto-rows: minmax(${ROW_PX}px, auto); gap: 12px; padding: 0 1.5rem 1.5rem; }
.component { min-width: 0; background: var(--card); border: 1px solid var(--border); border-radius: 10px; padding: 10px; overflow: hidden; }
.component h2 { font-size: .95rem; font-weight: 600; margin: 0 0 .4rem; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.component h2 .source { display: block; font-size: .7em; font-weight: 400; opacity: .7; overflow: hidden; text-overflow: ellipsis; }
.component-svg { width: 100%; display: block; }
.marks { list-style: none; display: flex; flex-wrap: wrap; gap: .25rem; margin: 0 0 .4rem; padding: 0; }
.mark { border-radius: 999px; padding: .05rem .55rem; font-size: .8rem; font-weight: 600; background: var(--border); }
.mark[data-tone=alert] { background: var(--bad); color: var(--card); }
.component:has(> .marks > .mark[data-tone=alert]) { border-color: var(--bad); box-shadow: inset 0 0 0 1px var(--bad); }
.empty-page { padding: 0 1.5rem; color: var(--muted); }
.shared { font-weight: 600; }
body.index main { max-width: 60rem; padding: 0 1.5rem 1.5rem; }
.pages { list-style: none; padding: 0; margin: 0; display: grid; gap: 8px; }
.pages li { background: var(--card); border: 1px solid var(--border); border-radius: 8px; padding: .6rem .9rem; display: flex; flex-direction: column; gap: .15rem; }
.meta { color: var(--muted); font-size: .85rem; }
@media (max-width: 699px) {
  header { padding: .6rem .75rem; }
  .grid { grid-template-columns: minmax(0, 1fr); gap: 10px; padding: 0 .75rem .75rem; }
  .component { grid-column: 1 / -1 !important; grid-row: auto !important; }
  body.index main { padding: 0 .75rem .75rem; }
}
body.kiosk { overflow: hidden; font-size: 18px; }
body.kiosk header { display: none; }
body.kiosk[data-state=reconnecting] header, body.kiosk[data-state=ended] header { display: flex; position: fixed; top: 0; right: 0; z-index: 1; padding: .3rem .8rem; background: var(--card); border-bottom-left-radius: 8px; }
body.kiosk[data-state] header h1, body.kiosk[data-state] header nav { display: none; }
/* Kiosk: the grid is the screen; its rows share the height and every drawing scales to fit its cell. */
body.kiosk .grid { height: 100vh; grid-auto-rows: minmax(0, 1fr); padding: 12px; }
body.kiosk .component { display: flex; flex-direction: column; min-height: 0; }
/* Titles read across a room: they grow with the screen (about 34 px on a 1920 px wide screen). */
body.kiosk .component h2 { font-size: clamp(1.5rem, 1.4vw + .5rem, 3rem); line-height: 1.2; flex: none; }
body.kiosk .component-svg { flex: 1 1 0; min-height: 0; height: 100% !important; }
/* A box's number reads across the room, bigger than its title: half the box's height or more, whatever its posted size (a box scales to its cell). */
body.kiosk .component-svg[data-type=horizontalBox] text.middle { font-size: 60px; }
body.kiosk .component-svg[data-type=verticalBox] text.bottom { font-size: 72px; }
body.kiosk .marks { flex: none; }
body.kiosk .mark { font-size: clamp(1rem, .9vw + .4rem, 2rem); }
@media (max-width: 699px) {
  body.kiosk { overflow: auto; }
  body.kiosk .grid { height: auto; grid-auto-rows: auto; }
}
${CHART_CSS}
`

/**
 * How often an open stream sends `ping` (live-streams.ts); the page reconnects after three missed.
 * Well inside every runtime's idle timeout (Bun cuts a connection silent for 10 s, its default
 * `idleTimeout`; Node and Deno have none for a response being streamed), so an idle page is never
 * cut, and a connection whose client vanished unannounced has data to fail on.
 */
export const HEARTBEAT_MS = 5_000

/** The stream is stale after this long without any event (three missed pings): the page reconnects. */
const STALE_MS = HEARTBEAT_MS * 3 + 5_000

export const LIVE_JS = `(() => {
  const body = document.body
  const grid = document.querySelector('[data-grid]')
  if (!grid) return
  const status = document.querySelector('[data-status]')
  const heading = document.querySelector('[data-title]')
  const empty = document.querySelector('[data-empty]')
  const shared = 'shared' in body.dataset
  let events = body.dataset.events
  let source = null
  let lastSeen = Date.now()
  let lost = false
  let ended = false
  let retryMs = 1000

  const setState = (state, text) => { body.dataset.state = state; status.textContent = text }
  const cellOf = (id) => document.getElementById('component-' + id)
  const version = (cell) => Number(cell.dataset.version)
  const parse = (markup) => { const template = document.createElement('template'); template.innerHTML = markup.trim(); return template.content.firstElementChild }

  // Grid order (row, then column): the one-column layout shows cells in document order.
  function order() {
    const cells = [...grid.children]
    const sorted = [...cells].sort((a, b) => Number(a.dataset.y) - Number(b.dataset.y) || Number(a.dataset.x) - Number(b.dataset.x))
    if (sorted.some((cell, i) => cell !== cells[i])) grid.append(...sorted)
    empty.hidden = cells.length > 0
  }
  // A component's marks (an alert firing), after its title: kept when its cell is redrawn, replaced by a marks event.
  const marksOf = (cell) => cell.querySelector(':scope > [data-marks]')
  function mark(cell, marks) {
    const current = marksOf(cell)
    if (current) current.remove()
    if (!marks) return
    const element = typeof marks === 'string' ? parse(marks) : marks
    const title = cell.querySelector(':scope > h2')
    if (title) title.after(element)
    else cell.prepend(element)
  }
  function remark(byComponent) {
    for (const cell of grid.children) mark(cell, byComponent[cell.dataset.component])
  }
  function upsert(update) {
    const current = cellOf(update.id)
    if (current && version(current) > update.version) return
    const cell = parse(update.html)
    if (current) {
      const marks = marksOf(current)
      if (marks) mark(cell, marks)
      current.replaceWith(cell)
    } else grid.append(cell)
    order()
  }
  function retitle(page) {
    const title = page.title || page.name
    heading.textContent = title
    document.title = title
    if (!shared && page.name !== body.dataset.page) {
      body.dataset.page = page.name
      events = '/pages/' + encodeURIComponent(page.name) + '/events'
      history.replaceState(null, '', '/pages/' + encodeURIComponent(page.name) + location.search)
    }
  }
  function end(reason) {
    ended = true
    source.close()
    grid.replaceChildren()
    empty.hidden = true
    setState('ended', reason)
  }
  // A fresh copy of the page replaces the cells, but for any the stream already brought newer.
  async function resync() {
    try {
      const response = await fetch(location.href, { cache: 'no-store', credentials: 'same-origin' })
      if (response.redirected || response.status === 404) return location.reload()
      if (!response.ok) return
      const copy = new DOMParser().parseFromString(await response.text(), 'text/html')
      const fresh = copy.querySelector('[data-grid]')
      if (!fresh) return
      const marks = {}
      for (const cell of fresh.children) { const found = marksOf(cell); if (found) marks[cell.dataset.component] = found.outerHTML }
      grid.replaceChildren(...[...fresh.children].map((cell) => {
        const current = cellOf(cell.dataset.component)
        return current && version(current) > version(cell) ? current : document.importNode(cell, true)
      }))
      remark(marks)
      const title = copy.querySelector('[data-title]')
      if (title) { heading.textContent = title.textContent; document.title = title.textContent }
      order()
    } catch {
      // Offline: the next reconnection tries again.
    }
  }
  function connect() {
    if (source) source.close()
    source = new EventSource(events)
    lastSeen = Date.now()
    const on = (name, handler) => source.addEventListener(name, (event) => { lastSeen = Date.now(); handler(event.data ? JSON.parse(event.data) : null) })
    source.addEventListener('open', () => {
      lastSeen = Date.now()
      retryMs = 1000
      if (lost) { lost = false; resync() }
      setState('live', 'live')
    })
    source.addEventListener('error', () => {
      if (ended) return
      lost = true
      setState('reconnecting', 'reconnecting…')
      // Closed for good (refused): see whether the page itself is still there, then try again later.
      if (source.readyState === EventSource.CLOSED) {
        resync().finally(() => setTimeout(connect, retryMs))
        retryMs = Math.min(retryMs * 2, 30000)
      }
    })
    on('component', upsert)
    on('removed', (data) => { const cell = cellOf(data.id); if (cell) cell.remove(); order() })
    on('page', retitle)
    on('marks', (data) => remark(data.components))
    on('ping', () => {})
    on('end', (data) => end(data.reason))
  }
  setInterval(() => {
    if (ended || Date.now() - lastSeen < ${STALE_MS}) return
    lost = true
    setState('reconnecting', 'reconnecting…')
    connect()
  }, 5000)

  connect()
})()
`

const version = (text: string) => createHash('sha1').update(text).digest('hex').slice(0, 10)
/** Part of the assets' URLs: a changed file is a new URL, so it can be cached for long. */
export const LIVE_CSS_VERSION = version(LIVE_CSS)
export const LIVE_JS_VERSION = version(LIVE_JS)
