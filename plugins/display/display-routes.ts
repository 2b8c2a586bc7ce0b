/**
 * The display API (`POST /api/component`, `GET /api/pages/{pageName}`) and the live pages. Its
 * answers are JSON `{message, detail, field?}` as documented in docs/display.md, not the v1 envelope.
 */
import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import type { Database } from '../../src/db'
import { readCookie, SESSION_COOKIE } from '../../src/http/credentials'
import { htmlResponse, html } from '../../src/http/html'
import { routeOf, type Logger } from '../../src/log'
import { requestIdOf } from '../../src/http/request-id'
import type { Sessions } from '../auth/api'
import type { FragmentCache } from './fragments'
import { LIVE_CSS, LIVE_JS } from './live-client'
import type { LiveExtensions } from './live-extensions'
import { findVisiblePage, livePage, pageCells, pageComponents, pageIndex, visiblePages } from './live-page'
import type { LiveStreams } from './live-streams'
import type { ShareLinks } from './share-links'
import type { ShareViewLimits } from './view-limits'
import { displayFailure, displayJson, mobileSession, refusalResponse, requireJson, usageHeaders } from './answers'
import { Component, ComponentData, ComponentUpdate } from './model'
import { displayErrorDoc, DISPLAY_TAGS, failureDocs, invalidApiKeyDoc, invalidSessionDoc, json, limitExceededDoc, NOT_ENVELOPE, usageHeaderDocs } from './openapi'
import type { CallGroups } from './call-groups'
import type { CountDisplayCall } from './calls'
import { updateComponent, type ChangeNotifier } from './update'

// ---- OpenAPI: documentation only. The handlers check bodies with their own compiled schemas and
// build every answer themselves, so none of this runs per request (no Elysia body/response schema).

const tags = DISPLAY_TAGS

const ComponentUpdateBody = Type.Object(
  {
    ...ComponentUpdate.properties,
    componentId: Type.String({ description: 'The `id` of the component (API v1 `/pages/{pageId}/components`).' }),
    apiKey: Type.String({ description: 'Your display key, `dpk_…` (account area: Display account).' }),
    data: Type.Union(Object.values(ComponentData), { description: "The whole content; `type` must be the component's type." }),
  },
  { title: 'ComponentUpdate', additionalProperties: false },
)

const componentUpdateDetail = {
  tags,
  summary: "Replace a component's content (display key in the body); counts one call of the key's daily limit.",
  description: `${NOT_ENVELOPE} Every call with a valid key counts, whatever its outcome, except one refused with 429; every answer to a valid key carries the X-RateLimit-* headers. An update older than the stored \`timestamp\` is not applied (409); an equal or newer one is.`,
  security: [],
  requestBody: { required: true, content: json(ComponentUpdateBody) },
  responses: {
    200: {
      description: 'Applied; viewers of the live page see it at once.',
      headers: usageHeaderDocs(true),
      content: json(Type.Object({ message: Type.Literal('updateSuccess'), limitRemaining: Type.Integer({ minimum: 0, description: 'Calls left today, after this one.' }) }, { additionalProperties: false })),
    },
    400: displayErrorDoc(
      "invalidRequest (not JSON, a missing, unknown or invalid field, or `data` taking more than display.maxComponentDataKilobytes as stored, numbers written out in full: `field` names it) or componentTypeMismatch (`data.type` is not the component's type). Counted, with the X-RateLimit-* headers, when the key is valid.",
      ['invalidRequest', 'componentTypeMismatch'],
      usageHeaderDocs(false),
    ),
    401: invalidApiKeyDoc,
    403: displayErrorDoc("readOnlyAccess: the key's user is a viewer of the page; only editors, its creator and administrators feed it (counted).", ['readOnlyAccess'], usageHeaderDocs(true)),
    404: displayErrorDoc("componentNotFound: no such component on a page the key's user can use (counted).", ['componentNotFound'], usageHeaderDocs(true)),
    409: displayErrorDoc('staleUpdate: the component holds data with a later timestamp; not applied (counted).', ['staleUpdate'], usageHeaderDocs(true)),
    429: limitExceededDoc,
    ...failureDocs,
  },
}

const pageComponentsDetail = {
  tags,
  summary: "A page's components as JSON, for mobile apps (what the live page /pages/{pageName} shows).",
  description: `${NOT_ENVELOPE} Signed in with a mobile session token (\`Authorization: Bearer\`, from POST /account/api/sessions); the page name matches in any case.`,
  security: [{ sessionToken: [] }],
  responses: {
    200: {
      description: 'The page and its components in grid order.',
      content: json(
        Type.Object(
          {
            page: Type.Object({ id: Component.properties.id, name: Type.String(), title: Type.Union([Type.String(), Type.Null()]) }, { additionalProperties: false }),
            components: Type.Array(Component),
          },
          { additionalProperties: false },
        ),
      ),
    },
    401: invalidSessionDoc,
    404: displayErrorDoc('pageNotFound: no such page, or not one you can see.', ['pageNotFound']),
    ...failureDocs,
  },
}

/** `?kiosk=1` (or `true`): only the components, fitted to the screen. */
const isKiosk = (query: Record<string, string | undefined>) => query.kiosk === '1' || query.kiosk === 'true'

/** The live page's assets: their URLs carry a content version, so a year of caching is safe. */
const ASSET_HEADERS = (type: string) => ({ 'content-type': `${type}; charset=utf-8`, 'cache-control': 'public, max-age=31536000, immutable' })

/** What the display API's routes and the live pages use, bound at setup. */
export interface DisplayRouteDeps {
  db: Database
  log: Logger
  sessions: Sessions
  streams: LiveStreams
  shareLinks: ShareLinks
  fragments: FragmentCache
  notifier: ChangeNotifier
  groups: CallGroups
  countCall: CountDisplayCall
  shareViews: ShareViewLimits
  /** `display.maxComponentDataKilobytes`, in bytes. */
  maxComponentDataBytes: number
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
  return htmlResponse(html`<html lang="en"><head><meta charset="utf-8" /><title>Too many requests</title></head><body><p>${detail}</p></body></html>`, 429, headers)
}

export function displayRoutes({ db, log, sessions, streams, shareLinks, fragments, notifier, groups, countCall, shareViews, maxComponentDataBytes, clientAddress, extensions }: DisplayRouteDeps) {
  /** The web session of a live page request, or null (the page then sends to sign-in). */
  const viewer = async (request: Request) => sessions.authenticate(readCookie(request, SESSION_COOKIE), 'web').catch(() => null)
  const notFoundPage = () => htmlResponse(html`<html lang="en"><head><meta charset="utf-8" /><title>Not found</title></head><body><p>No such page.</p></body></html>`, 404)
  /** Sign in first, then back here: the path and query travel as `next` (the sign-in form only follows same-site paths). */
  const toSignIn = (request: Request) => {
    const url = new URL(request.url)
    return new Response(null, { status: 303, headers: { location: `/account/sign-in?next=${encodeURIComponent(url.pathname + url.search)}`, 'cache-control': 'no-store' } })
  }

  return new Elysia({ name: 'display-api' })
    .post(
      '/api/component',
      async ({ request, body, set, route }) => {
        const refused = requireJson(request, body)
        if (refused) {
          countCall('component', 'invalidRequest')
          return refused
        }
        try {
          const outcome = await updateComponent(groups, body, maxComponentDataBytes)
          countCall('component', outcome.ok ? 'ok' : outcome.error.message)
          if (!outcome.ok) return refusalResponse(outcome)
          notifier.changed(outcome.organizationId, outcome.pageId, outcome.componentId)
          const remaining = Math.max(0, outcome.usage.limit - outcome.usage.used)
          return displayJson(200, { message: 'updateSuccess', limitRemaining: remaining }, usageHeaders(outcome.usage, 200))
        } catch (error) {
          countCall('component', 'failed')
          return displayFailure(error, log, { requestId: requestIdOf(set), route: routeOf(request, route) })
        }
      },
      { detail: componentUpdateDetail },
    )
    .get(
      '/api/pages/:pageName',
      async ({ request, params, set, route }) => {
        try {
          const principal = await mobileSession(sessions, request)
          if (principal instanceof Response) return principal
          const page = await findVisiblePage(db, principal, params.pageName)
          if (!page) return displayJson(404, { message: 'pageNotFound', detail: 'No such page, or not one you can see.' })
          return displayJson(200, { page, components: await pageComponents(db, principal.user.organizationId, page.id) })
        } catch (error) {
          return displayFailure(error, log, { requestId: requestIdOf(set), route: routeOf(request, route) })
        }
      },
      { detail: pageComponentsDetail },
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
        if (!shared) return notFoundPage()
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
