/**
 * Server-sent event streams of the live pages (`GET /pages/{pageName}/events`), by page. An
 * update notified by any instance is read once here and pushed to every local viewer of its page.
 *
 * A stream knows the session, user and page it was opened for, and ends (an `end` event, then the
 * close) within a second of losing any of them, on every instance: a sign-out or a deactivation
 * (the auth plugin's revocations), the session's absolute end (a timer), a removed access entry or
 * a deleted page (this plugin's PAGE_ACCESS_CHANNEL), or a membership lost in a team that gave
 * access (the teams plugin's events) — each followed by one statement re-checking the viewers it
 * may concern. Every 30 s, and whenever notifications may have been missed, all streams are
 * re-checked, which also keeps their sessions from idling out: an open dashboard is in use.
 */
import { queryText, type Database } from '../../src/db'
import type { EventBus } from '../../src/events'
import { describeError, type Logger } from '../../src/log'
import type { Revocation, Sessions } from '../auth/api'
import type { TeamEvents, TeamMembershipLoss } from '../teams/api'
import type { FragmentCache } from './fragments'
import { componentCell, type ComponentCell } from './live-page'
import { displayJson } from './answers'
import { COMPONENT_COLUMNS, fromComponentText, PAGE_ACCESS_CHANNEL } from './pages-service'
import { MAY_USE_PAGE } from './page-access'

const SWEEP_EVERY_MS = 30_000

export interface StreamViewer {
  pageId: string
  userId: string
  sessionId: string
  /** The session's absolute end. */
  expiresAt: Date
}

interface Listener extends StreamViewer {
  send(event: string, data: unknown): void
  end(reason: string): void
}

/** $1 pair keys, $2 users, $3 pages: the pairs whose user (still active) may still see the page. */
const STILL_VISIBLE = `select l.key from unnest($1::text[], $2::uuid[], $3::uuid[]) as l(key, user_id, page_id)
  join user_directory u on u.id = l.user_id and u.status = 'active'
  join pages p on p.id = l.page_id
  cross join lateral (select u.id as user_id, u.organization_id, u.role) a
  where ${MAY_USE_PAGE}`

export class LiveStreams {
  private readonly listeners = new Set<Listener>()
  private sweeper: ReturnType<typeof setInterval> | undefined

  constructor(
    private readonly db: Database,
    private readonly log: Logger,
    private readonly fragments: FragmentCache,
    private readonly sessions: Sessions,
    private readonly maxStreamsPerUser: number,
  ) {}

  /** Subscribes to everything that can end a stream (call once, at setup). */
  async watch(events: EventBus, teams: TeamEvents): Promise<void> {
    const sweep = () => void this.sweep()
    this.sessions.onRevoked((revocation) => this.revoked(revocation), sweep)
    await teams.onMembershipLost((loss) => void this.membershipLost(loss), sweep)
    await events.subscribe(PAGE_ACCESS_CHANNEL, ({ pageId }: { pageId: string }) => void this.recheck([...this.listeners].filter((listener) => listener.pageId === pageId)), sweep)
    this.sweeper = setInterval(sweep, SWEEP_EVERY_MS)
    this.sweeper.unref?.()
  }

  /** Handles one change notice: `{pageId, componentId}`. */
  async publish(event: { pageId: string; componentId: string }): Promise<void> {
    const audience = [...this.listeners].filter((listener) => listener.pageId === event.pageId)
    if (!audience.length) return
    try {
      const [row] = await queryText<Parameters<typeof fromComponentText>[0] & { version: number }>(this.db, `select ${COMPONENT_COLUMNS}, c.version from components c where c.id = $1`, [event.componentId])
      if (!row) return
      const component = fromComponentText(row)
      const svg = this.fragments.svg({ ...component, version: row.version }, () => component.data)
      const update = { id: component.id, type: component.type, timestamp: component.timestamp, data: component.data, html: componentCell({ ...component, version: row.version } as ComponentCell, svg) }
      for (const listener of audience) listener.send('component', update)
    } catch (error) {
      this.log.warn('could not push a live update', describeError(error))
    }
  }

  /** A `text/event-stream` response that lives until the viewer goes away or loses access; 429 past the per-user bound. */
  open(viewer: StreamViewer, signal: AbortSignal): Response {
    let open = 0
    for (const listener of this.listeners) if (listener.userId === viewer.userId) open++
    if (open >= this.maxStreamsPerUser)
      return displayJson(429, { message: 'tooManyStreams', detail: `At most ${this.maxStreamsPerUser} live streams per user are open at once; close one first.` }, { 'retry-after': '5' })
    const encoder = new TextEncoder()
    let heartbeat: ReturnType<typeof setInterval> | undefined
    let expiry: ReturnType<typeof setTimeout> | undefined
    let listener: Listener | undefined
    const stream = new ReadableStream<Uint8Array>({
      start: (controller) => {
        let closed = false
        const close = () => {
          if (closed) return
          closed = true
          this.listeners.delete(listener!)
          clearInterval(heartbeat)
          clearTimeout(expiry)
          try {
            controller.close()
          } catch {
            // already closed
          }
        }
        const write = (text: string) => {
          if (closed) return
          try {
            controller.enqueue(encoder.encode(text))
          } catch {
            close()
          }
        }
        listener = {
          ...viewer,
          send: (event, data) => write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`),
          end: (reason) => {
            write(`event: end\ndata: ${JSON.stringify({ reason })}\n\n`)
            close()
          },
        }
        this.listeners.add(listener)
        write('retry: 2000\n: connected\n\n')
        heartbeat = setInterval(() => write(': keep-alive\n\n'), 15_000)
        expiry = setTimeout(() => listener!.end('Your session expired; sign in again.'), Math.min(Math.max(0, viewer.expiresAt.getTime() - Date.now()), 2 ** 31 - 1))
        signal.addEventListener('abort', close)
      },
      cancel: () => listener?.end('closed'),
    })
    return new Response(stream, {
      headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no' },
    })
  }

  /** Open streams of this instance (tests, metrics). */
  get size(): number {
    return this.listeners.size
  }

  /** Ends every stream (shutdown). */
  closeAll(): void {
    clearInterval(this.sweeper)
    for (const listener of [...this.listeners]) listener.end('The server is restarting.')
  }

  private revoked(revocation: Revocation) {
    for (const listener of [...this.listeners]) {
      if ('sessionId' in revocation && listener.sessionId === revocation.sessionId) listener.end('You signed out.')
      else if ('userId' in revocation && listener.userId === revocation.userId) listener.end('Your account was deactivated.')
    }
  }

  private membershipLost(loss: TeamMembershipLoss) {
    const concerned = [...this.listeners].filter((listener) => loss.userId === undefined || listener.userId === loss.userId)
    return this.recheck(concerned)
  }

  /** Ends the streams among `listeners` whose user may no longer see their page: one statement. */
  private async recheck(listeners: Listener[]): Promise<void> {
    if (!listeners.length) return
    const pairs = new Map<string, { userId: string; pageId: string }>()
    for (const listener of listeners) pairs.set(`${listener.userId}:${listener.pageId}`, listener)
    try {
      const entries = [...pairs]
      const rows = await queryText<{ key: string }>(this.db, STILL_VISIBLE, [entries.map(([key]) => key), entries.map(([, pair]) => pair.userId), entries.map(([, pair]) => pair.pageId)])
      const visible = new Set(rows.map((row) => row.key))
      for (const listener of listeners) if (!visible.has(`${listener.userId}:${listener.pageId}`)) listener.end('You no longer have access to this page.')
    } catch (error) {
      this.log.warn('could not re-check live viewers', describeError(error))
    }
  }

  /** Re-checks every stream: its session (and keeps it from idling out), then its page. */
  private async sweep(): Promise<void> {
    if (!this.listeners.size) return
    try {
      const live = await this.sessions.stillLive([...new Set([...this.listeners].map((listener) => listener.sessionId))])
      for (const listener of [...this.listeners]) if (!live.has(listener.sessionId)) listener.end('Your session ended; sign in again.')
    } catch (error) {
      this.log.warn('could not re-check live sessions', describeError(error))
    }
    await this.recheck([...this.listeners])
  }
}
