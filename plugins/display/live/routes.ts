/**
 * The live pages (`/pages`, `/pages/{pageName}`, a share link's `/s/{token}`, their event streams
 * and assets) and their JSON twin for mobile apps, `GET /api/pages/{pageName}`, answered as the
 * display API answers: JSON `{message, detail, field?}` as documented in docs/display.md, not the
 * v1 envelope.
 */
import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import type { Database } from '../../../src/db'
import { readCookie, SESSION_COOKIE } from '../../../src/http/credentials'
import { answerDoc, displayErrorDoc, displayJson, displayRoute, json, refuse, type DisplayKit } from '../../../src/http/display-api'
import type { Sessions } from '../../auth/api'
import { Component } from '../model'
import type { ShareLinks } from '../pages/share-links'
import { LIVE_CSS, LIVE_JS } from './client'
import type { LiveExtensions } from './extensions'
import type { FragmentCache } from './fragments'
import { findVisiblePage, livePage, messagePage, pageCells, pageComponents, pageIndex, visiblePages } from './page'
import type { LiveStreams } from './streams'
import type { ShareViewLimits } from './view-limits'

/** The page and its components, as `GET /api/pages/{pageName}` answers them. */
const PageComponents = Type.Object(
  {
    page: Type.Object({ id: Component.properties.id, name: Type.String(), title: Type.Union([Type.String(), Type.Null()]) }, { additionalProperties: false }),
    components: Type.Array(Component),
  },
  { additionalProperties: false },
)

// Documentation only (the kit's route builder), made for each app (displayRoute says why): the
// handler builds every answer itself.
const pageComponentsRoute = () =>
  displayRoute({
    session: 'mobile',
    summary: "A page's components as JSON, for mobile apps (what the live page /pages/{pageName} shows).",
    description: 'The page name matches in any case.',
    responses: {
      200: answerDoc('The page and its components in grid order.', json(PageComponents)),
      404: displayErrorDoc('pageNotFound: no such page, or not one you can see.', ['pageNotFound']),
    },
  })

/** `?kiosk=1` (or `true`): only the components, fitted to the screen. */
const isKiosk = (query: Record<string, string | undefined>) => query.kiosk === '1' || query.kiosk === 'true'

/** The live page's assets: their URLs carry a content version, so a year of caching is safe. */
const ASSET_HEADERS = (type: string) => ({ 'content-type': `${type}; charset=utf-8`, 'cache-control': 'public, max-age=31536000, immutable' })

/** What the live pages use, bound at setup. */
export interface LiveRouteDeps {
  db: Database
  /** The display API kit of the plugin's routes: the mobile session macro and `handle`. */
  kit: DisplayKit
  /** The web sessions of the live pages themselves (a missing one sends to sign-in). */
  sessions: Sessions
  streams: LiveStreams
  shareLinks: ShareLinks
  fragments: FragmentCache
  shareViews: ShareViewLimits
  /** The client's address (the core's, honouring `server.trustProxy`). */
  clientAddress(request: Request): string
  /** What other plugins add to the live pages (LivePageExtensions): scripts, marks. */
  extensions: LiveExtensions
}

/** A share link view refused by its per-address or per-link limit: 429 with Retry-After, as a page or (the events stream) as JSON. */
function tooManyViews(seconds: number, page: boolean): Response {
  const detail = `Too many views of shared pages; try again in ${seconds} s.`
  const headers = { 'retry-after': String(seconds) }
  if (!page) return displayJson(429, { message: 'tooManyRequests', detail }, headers)
  return messagePage('Too many requests', detail, 429, { shared: true, headers })
}

export function liveRoutes({ db, kit, sessions, streams, shareLinks, fragments, shareViews, clientAddress, extensions }: LiveRouteDeps) {
  /** The web session of a live page request, or null (the page then sends to sign-in). */
  const viewer = async (request: Request) => sessions.authenticate(readCookie(request, SESSION_COOKIE), 'web').catch(() => null)
  const notFoundPage = () => messagePage('Not found', 'No such page, or not one you can see.', 404)
  const notSharedPage = () => messagePage('Not found', 'No such share link, or it was revoked or has expired.', 404, { shared: true })
  /** Sign in first, then back here: the path and query travel as `next` (the sign-in form only follows same-site paths). */
  const toSignIn = (request: Request) => {
    const url = new URL(request.url)
    return new Response(null, { status: 303, headers: { location: `/account/sign-in?next=${encodeURIComponent(url.pathname + url.search)}`, 'cache-control': 'no-store' } })
  }

  return new Elysia({ name: 'display-live' })
    .use(kit.plugin)
    .get(
      '/api/pages/:pageName',
      kit.handle(async ({ params, principal }) => {
        const page = await findVisiblePage(db, principal, params.pageName!)
        if (!page) refuse(404, 'pageNotFound', 'No such page, or not one you can see.')
        return displayJson(200, { page, components: await pageComponents(db, principal.user.organizationId, page.id) })
      }),
      pageComponentsRoute(),
    )
    .get(
      '/pages',
      async ({ request }) => {
        const principal = await viewer(request)
        if (!principal) return toSignIn(request)
        return pageIndex(await visiblePages(db, principal), principal.user)
      },
      { detail: { hide: true } },
    )
    .get(
      '/pages/:pageName',
      async ({ request, params, query }) => {
        const principal = await viewer(request)
        if (!principal) return toSignIn(request)
        const page = await findVisiblePage(db, principal, params.pageName)
        if (!page) return notFoundPage()
        const organizationId = principal.user.organizationId
        const [cells, marks] = await Promise.all([pageCells(db, fragments, organizationId, page.id), extensions.marks(organizationId, page.id)])
        return livePage(page, cells, { events: `/pages/${encodeURIComponent(page.name)}/events`, kiosk: isKiosk(query), shared: false, scripts: extensions.scripts, marks })
      },
      { detail: { hide: true } },
    )
    .get(
      '/pages/:pageName/events',
      async ({ request, params }) => {
        const principal = await viewer(request)
        if (!principal) return displayJson(401, { message: 'invalidSession', detail: 'Sign in first.' })
        const page = await findVisiblePage(db, principal, params.pageName)
        if (!page) return displayJson(404, { message: 'pageNotFound', detail: 'No such page, or not one you can see.' })
        return streams.open({ pageId: page.id, organizationId: principal.user.organizationId, userId: principal.user.id, sessionId: principal.sessionId, expiresAt: principal.expiresAt }, request.signal, request.method)
      },
      { detail: { hide: true } },
    )
    .get(
      '/s/:token',
      async ({ request, params, query }) => {
        const wait = shareViews.fromAddress(clientAddress(request))
        if (wait) return tooManyViews(wait, true)
        const shared = await shareLinks.resolve(params.token)
        if (!shared) return notSharedPage()
        const linkWait = shareViews.ofLink(shared.linkId)
        if (linkWait) return tooManyViews(linkWait, true)
        const [cells, marks] = await Promise.all([pageCells(db, fragments, shared.organizationId, shared.page.id), extensions.marks(shared.organizationId, shared.page.id)])
        return livePage(shared.page, cells, { events: `/s/${encodeURIComponent(params.token)}/events`, kiosk: isKiosk(query), shared: true, marks })
      },
      { detail: { hide: true } },
    )
    .get(
      '/s/:token/events',
      async ({ request, params }) => {
        const wait = shareViews.fromAddress(clientAddress(request))
        if (wait) return tooManyViews(wait, false)
        const shared = await shareLinks.resolve(params.token)
        if (!shared) return displayJson(404, { message: 'pageNotFound', detail: 'No such share link, or it was revoked or has expired.' })
        const linkWait = shareViews.ofLink(shared.linkId)
        if (linkWait) return tooManyViews(linkWait, false)
        return streams.open({ pageId: shared.page.id, organizationId: shared.organizationId, linkId: shared.linkId, expiresAt: shared.expiresAt }, request.signal, request.method)
      },
      { detail: { hide: true } },
    )
    .get('/pages/assets/live.css', () => new Response(LIVE_CSS, { headers: ASSET_HEADERS('text/css') }), { detail: { hide: true } })
    .get('/pages/assets/live.js', () => new Response(LIVE_JS, { headers: ASSET_HEADERS('text/javascript') }), { detail: { hide: true } })
}
