/**
 * The display API (`POST /api/component`, `GET /api/pages/{pageName}`) and the live pages. Its
 * answers are JSON `{message, detail, field?}` as the seed and SPEC describe, not the v1 envelope.
 */
import { Elysia } from 'elysia'
import type { Database } from '../../src/db'
import { ApiError } from '../../src/http/errors'
import { htmlResponse, html } from '../../src/http/html'
import type { Logger } from '../../src/log'
import type { Sessions } from '../../src/services/auth'
import { findVisiblePage, LIVE_CSS, LIVE_JS, livePage, pageComponents, type LiveStreams } from './live'
import { displayFailure, displayJson, refusalResponse, requireJson, usageHeaders } from './model'
import { updateComponent, type ChangeNotifier } from './update'

const cookieToken = (request: Request) => /(?:^|;\s*)wt_session=([^;]+)/.exec(request.headers.get('cookie') ?? '')?.[1]
const bearerToken = (request: Request) => /^Bearer[ ]+(\S+)[ ]*$/i.exec(request.headers.get('authorization') ?? '')?.[1]

export function displayRoutes(db: Database, sessions: Sessions, streams: LiveStreams, notifier: ChangeNotifier, log: Logger) {
  /** The web session of a live page request, or null (the page then sends to sign-in). */
  const viewer = async (request: Request) => sessions.authenticate(cookieToken(request) ? decodeURIComponent(cookieToken(request)!) : undefined, 'web').catch(() => null)
  const notFoundPage = () => htmlResponse(html`<html lang="en"><head><meta charset="utf-8" /><title>Not found</title></head><body><p>No such page.</p></body></html>`, 404)

  return new Elysia({ name: 'display-api' })
    .post(
      '/api/component',
      async ({ request, body }) => {
        const refused = requireJson(request, body)
        if (refused) return refused
        try {
          const outcome = await updateComponent(db, body)
          if (!outcome.ok) return refusalResponse(outcome)
          notifier.changed(outcome.pageId, outcome.componentId)
          const remaining = Math.max(0, outcome.usage.limit - outcome.usage.used)
          return displayJson(200, { message: 'updateSuccess', limitRemaining: remaining }, usageHeaders(outcome.usage, 200))
        } catch (error) {
          return displayFailure(error, log)
        }
      },
      { detail: { hide: true } },
    )
    .get(
      '/api/pages/:pageName',
      async ({ request, params }) => {
        try {
          const principal = await sessions.authenticate(bearerToken(request), 'mobile')
          const page = await findVisiblePage(db, principal, params.pageName)
          if (!page) return displayJson(404, { message: 'pageNotFound', detail: 'No such page, or not one you can see.' })
          return displayJson(200, { page, components: await pageComponents(db, page.id) })
        } catch (error) {
          if (error instanceof ApiError && error.status === 401) return displayJson(401, { message: 'invalidSession', detail: error.message }, error.headers)
          return displayFailure(error, log)
        }
      },
      { detail: { hide: true } },
    )
    .get(
      '/pages/:pageName',
      async ({ request, params }) => {
        const principal = await viewer(request)
        if (!principal) return new Response(null, { status: 303, headers: { location: '/account/sign-in', 'cache-control': 'no-store' } })
        const page = await findVisiblePage(db, principal, params.pageName)
        if (!page) return notFoundPage()
        return livePage(page, await pageComponents(db, page.id))
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
        return streams.open(page.id, request.signal)
      },
      { detail: { hide: true } },
    )
    .get('/pages/assets/live.css', () => new Response(LIVE_CSS, { headers: { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=3600' } }), { detail: { hide: true } })
    .get('/pages/assets/live.js', () => new Response(LIVE_JS, { headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=3600' } }), { detail: { hide: true } })
}
