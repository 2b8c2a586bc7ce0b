/**
 * Server-sent event streams of the live pages (`GET /pages/{pageName}/events`, and
 * `/s/{token}/events` of a share link), by page. A change notified by any instance (a
 * component's data, title, place, creation or deletion; the page's title) is read once here and
 * pushed to every local viewer of its page.
 *
 * A stream knows the session, user and page it was opened for (or its share link), and ends (an
 * `end` event, then the close) within a second of losing any of them, on every instance: a
 * sign-out or a deactivation (the auth plugin's revocations), the session's or link's end (a
 * timer), a removed access entry, a revoked link or a deleted page (this plugin's
 * PAGE_ACCESS_CHANNEL), or a membership lost in a team that gave access (the teams plugin's
 * events) — each followed by one statement re-checking the viewers it may concern. Every 30 s,
 * and whenever notifications may have been missed, all streams are re-checked, which also keeps
 * their sessions from idling out: an open dashboard is in use. A `ping` every 5 s (HEARTBEAT_MS)
 * keeps the connection from idling out on any runtime, lets the page notice a stale connection
 * and reconnect, and gives a connection whose client vanished unannounced data to fail on.
 */
import { sql } from 'drizzle-orm'
import type { Database } from '../../../src/db'
import { displayJson } from '../../../src/http/display-api'
import type { EventBus } from '../../../src/events'
import { describeError, type Logger } from '../../../src/log'
import { compileStatement, runStatement } from '../../../src/statements'
import type { Revocation, Sessions } from '../../auth/api'
import type { TeamEvents, TeamMembershipLoss } from '../../teams/api'
import { MAY_USE_PAGE } from '../pages/access'
import { PAGE_ACCESS_CHANNEL } from '../pages/channels'
import { COMPONENT_COLUMNS, fromComponentText, type ComponentTextRow } from '../pages/service'
import { workingLinks } from '../pages/share-links'
import { HEARTBEAT_MS } from './client'
import type { LiveExtensions } from './extensions'
import type { FragmentCache } from './fragments'
import { componentCell, type ComponentCell } from './page'

const SWEEP_EVERY_MS = 30_000

/** A signed-in viewer of a live page: ends with their session, their account or their access. */
export interface SessionViewer {
  pageId: string
  /** The page's organization: the statements that read the page for this stream name it. */
  organizationId: string
  userId: string
  sessionId: string
  /** The session's absolute end. */
  expiresAt: Date
}

/** A viewer through a share link (`/s/<token>`): ends when the link is revoked or expires. */
export interface LinkViewer {
  pageId: string
  organizationId: string
  linkId: string
  /** The link's end, if it has one. */
  expiresAt: Date | null
}

export type StreamViewer = SessionViewer | LinkViewer

type Listener = StreamViewer & {
  send(event: string, data: unknown): void
  end(reason: string): void
  /** Closes the stream without an `end` event: the browser reconnects (a restart). */
  drop(): void
}

const isLinkViewer = (viewer: StreamViewer): viewer is LinkViewer => 'linkId' in viewer

/** A change notice of DISPLAY_CHANNEL: a component's data, settings, creation or deletion, the page's marks (`marks`), or (neither) the page's name or title. */
export interface PageChange {
  pageId: string
  componentId?: string
  marks?: true
}

/** Of the pairs (`keys`, `userIds`, `pageIds`: one entry per pair), those whose user (still active) may still see the page. */
const STILL_VISIBLE = compileStatement(sql`select l.key from unnest(${sql.placeholder('keys')}::text[], ${sql.placeholder('userIds')}::uuid[], ${sql.placeholder('pageIds')}::uuid[]) as l(key, user_id, page_id)
  join user_directory u on u.id = l.user_id and u.status = 'active'
  join pages p on p.id = l.page_id and p.organization_id = u.organization_id
  cross join lateral (select u.id as user_id, u.organization_id, u.role) a
  where ${MAY_USE_PAGE}`)

/** The component `component` of the page `page` of `organization`, as the API shows it, with its version. */
const COMPONENT = compileStatement(
  sql`select ${COMPONENT_COLUMNS}, c.version, c.feed_label as "feedLabel" from components c where c.id = ${sql.placeholder('component')} and c.page_id = ${sql.placeholder('page')} and c.organization_id = ${sql.placeholder('organization')}`,
)

/** The name and title of the page `page` of `organization`. */
const PAGE = compileStatement(sql`select name, title from pages where id = ${sql.placeholder('page')} and organization_id = ${sql.placeholder('organization')}`)

const STREAM_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no' }

export class LiveStreams {
  private readonly listeners = new Set<Listener>()
  private sweeper: ReturnType<typeof setInterval> | undefined

  constructor(
    private readonly db: Database,
    private readonly log: Logger,
    private readonly fragments: FragmentCache,
    private readonly extensions: LiveExtensions,
    private readonly sessions: Sessions,
    private readonly bounds: { maxStreamsPerUser: number; maxStreamsPerLink: number },
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

  /**
   * Handles one change notice: a component's cell (`component`: its id, version and HTML), its
   * removal (`removed`), the page's marks (`marks`: every marked component's markup, by id), or
   * the page's name and title (`page`), to every local viewer of the page.
   */
  async publish(change: PageChange): Promise<void> {
    const audience = [...this.listeners].filter((listener) => listener.pageId === change.pageId)
    if (!audience.length) return
    try {
      // Every viewer of a page is of the page's organization.
      const { organizationId } = audience[0]!
      const [event, data] = change.componentId
        ? await this.componentEvent(organizationId, change.pageId, change.componentId)
        : change.marks
          ? ['marks', { components: Object.fromEntries(await this.extensions.marks(organizationId, change.pageId)) }]
          : await this.pageEvent(organizationId, change.pageId)
      if (event) for (const listener of audience) listener.send(event, data)
    } catch (error) {
      this.log.warn('could not push a live update', describeError(error))
    }
  }

  private async componentEvent(organizationId: string, pageId: string, componentId: string): Promise<[string, unknown]> {
    const [row] = await runStatement<ComponentTextRow & { version: number; feedLabel: string | null }>(this.db, COMPONENT, { component: componentId, page: pageId, organization: organizationId })
    if (!row) return ['removed', { id: componentId }]
    const { feedLabel, ...columns } = row
    const component = fromComponentText(columns)
    const cell = { ...component, version: row.version, feedLabel } as ComponentCell
    const svg = this.fragments.svg(cell, () => component.data)
    return ['component', { id: component.id, type: component.type, version: row.version, timestamp: component.timestamp, data: component.data, html: componentCell(cell, svg) }]
  }

  private async pageEvent(organizationId: string, pageId: string): Promise<[string | undefined, unknown]> {
    const [page] = await runStatement<{ name: string; title: string | null }>(this.db, PAGE, { page: pageId, organization: organizationId })
    // A deleted page: PAGE_ACCESS_CHANNEL ends its streams.
    return page ? ['page', page] : [undefined, undefined]
  }

  /**
   * A `text/event-stream` response that lives until the viewer goes away or loses access; 429 past
   * the per-user or per-link bound. A HEAD request gets the stream's headers and no stream: a
   * stream never ends, so answering HEAD as GET (headers once the body is known) never answered.
   */
  open(viewer: StreamViewer, signal: AbortSignal, method = 'GET'): Response {
    if (method === 'HEAD') return new Response(null, { headers: STREAM_HEADERS })
    const link = isLinkViewer(viewer)
    let open = 0
    for (const listener of this.listeners) if (link ? isLinkViewer(listener) && listener.linkId === viewer.linkId : !isLinkViewer(listener) && listener.userId === viewer.userId) open++
    const bound = link ? this.bounds.maxStreamsPerLink : this.bounds.maxStreamsPerUser
    if (open >= bound)
      return displayJson(429, { message: 'tooManyStreams', detail: `At most ${bound} live streams per ${link ? 'share link' : 'user'} are open at once on this server; close one first.` }, { 'retry-after': '5' })
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
          drop: close,
        }
        this.listeners.add(listener)
        write('retry: 2000\n: connected\n\n')
        // An event, not a comment: the page sees it and reconnects when they stop (a stale connection).
        heartbeat = setInterval(() => write(`event: ping\ndata: {}\n\n`), HEARTBEAT_MS)
        if (viewer.expiresAt)
          expiry = setTimeout(
            () => listener!.end(link ? 'This share link has expired.' : 'Your session expired; sign in again.'),
            Math.min(Math.max(0, viewer.expiresAt.getTime() - Date.now()), 2 ** 31 - 1),
          )
        signal.addEventListener('abort', close)
      },
      cancel: () => listener?.end('closed'),
    })
    return new Response(stream, { headers: STREAM_HEADERS })
  }

  /** Open streams of this instance (tests, metrics). */
  get size(): number {
    return this.listeners.size
  }

  /** Stops the re-checks and closes every stream without an `end` (shutdown): the pages reconnect, to another instance or after the restart. */
  closeAll(): void {
    clearInterval(this.sweeper)
    this.dropAll()
  }

  /** Closes every stream without an `end`, as a restart or a network failure would; the pages reconnect and resynchronise. */
  dropAll(): void {
    for (const listener of [...this.listeners]) listener.drop()
  }

  private revoked(revocation: Revocation) {
    for (const listener of [...this.listeners]) {
      if (isLinkViewer(listener)) continue
      if ('sessionId' in revocation && listener.sessionId === revocation.sessionId) listener.end('You signed out.')
      else if ('userId' in revocation && listener.userId === revocation.userId) listener.end('Your account was deactivated.')
    }
    // A deactivated user's share links stop too: one statement re-checks the open links.
    if ('userId' in revocation) void this.recheck([...this.listeners].filter((listener) => isLinkViewer(listener)))
  }

  private membershipLost(loss: TeamMembershipLoss) {
    // Share links are concerned too: their creator may have been an editor through the team.
    const concerned = [...this.listeners].filter((listener) => isLinkViewer(listener) || loss.userId === undefined || listener.userId === loss.userId)
    return this.recheck(concerned)
  }

  /** Ends the streams among `listeners` that may no longer see their page: one statement for users, one for links. */
  private async recheck(listeners: Listener[]): Promise<void> {
    const viewers = listeners.filter((listener): listener is Listener & SessionViewer => !isLinkViewer(listener))
    const links = listeners.filter((listener): listener is Listener & LinkViewer => isLinkViewer(listener))
    try {
      if (viewers.length) {
        const pairs = new Map<string, { userId: string; pageId: string }>()
        for (const listener of viewers) pairs.set(`${listener.userId}:${listener.pageId}`, listener)
        const entries = [...pairs]
        const rows = await runStatement<{ key: string }>(this.db, STILL_VISIBLE, {
          keys: entries.map(([key]) => key),
          userIds: entries.map(([, pair]) => pair.userId),
          pageIds: entries.map(([, pair]) => pair.pageId),
        })
        const visible = new Set(rows.map((row) => row.key))
        for (const listener of viewers) if (!visible.has(`${listener.userId}:${listener.pageId}`)) listener.end('You no longer have access to this page.')
      }
      if (links.length) {
        const valid = await workingLinks(this.db, links.map((listener) => listener.linkId))
        for (const listener of links) if (!valid.has(listener.linkId)) listener.end('This share link was revoked or has expired, or its creator may no longer share the page.')
      }
    } catch (error) {
      this.log.warn('could not re-check live viewers', describeError(error))
    }
  }

  /** Re-checks every stream: its session (and keeps it from idling out), then its page or link. */
  private async sweep(): Promise<void> {
    if (!this.listeners.size) return
    const sessionIds = [...new Set([...this.listeners].flatMap((listener) => (isLinkViewer(listener) ? [] : [listener.sessionId])))]
    if (sessionIds.length)
      try {
        const live = await this.sessions.stillLive(sessionIds)
        for (const listener of [...this.listeners]) if (!isLinkViewer(listener) && !live.has(listener.sessionId)) listener.end('Your session ended; sign in again.')
      } catch (error) {
        this.log.warn('could not re-check live sessions', describeError(error))
      }
    await this.recheck([...this.listeners])
  }
}
