/**
 * The display API kit a plugin's display API routes `.use()`: the `mobile` and `web` session
 * macros, and `handle`, which answers whatever a handler throws in the display API's words. With
 * `displayRoute` (openapi.ts) documenting each route and `validBody` (body.ts) checking its body,
 * a route is its handler and a few lines.
 *
 * Why not an `onError` hook: the root app's error hook, registered before any plugin, runs first
 * for every route and answers in the API v1 envelope; so the kit answers its failures itself,
 * within the route (its handler and its session macros), through one function: displayFailure.
 */
import { Elysia, status } from 'elysia'
import type { Logger } from '../../log'
import { routeOf } from '../../log'
import type { Principal } from '../../services/identity'
import { requestIdOf } from '../request-id'
import { displayFailure, mobileSession, webSession, type SessionLookup } from './answers'

export interface DisplayKitDeps {
  /** Session lookup (the auth plugin's sessions): the kit imports no plugin. */
  sessions: SessionLookup
  /** Where unexpected failures are logged (with the request id and route). */
  log: Logger
  /** Keeps two kits apart in one process (one per plugin and app). */
  seed: string
}

/** What a display API handler is given: the request, its parsed body (or BodyProblem), path parameters and, on a session route only, the signed-in `principal`. */
export interface DisplayContext {
  request: Request
  body: unknown
  params: Record<string, string>
  principal: Principal
}

/** Where a request is served, for the log: what `fail` reads of Elysia's context. */
export type RequestSite = { request: Request; set: { headers: Record<string, unknown> }; route?: string }
const siteOf = ({ request, set, route }: RequestSite) => ({ requestId: requestIdOf(set), route: routeOf(request, route) })

/** Builds the kit of one plugin's display API routes. */
export function createDisplayKit({ sessions, log, seed }: DisplayKitDeps) {
  /**
   * The answer to `error`, thrown while serving the request of `site` (its request, `set` and
   * route): displayFailure's, logged with the request id and route. `handle` answers with it; a
   * route that catches its own failures (a hot path, which `handle`'s wrapper would cost a promise
   * and a context object per request) answers with it too.
   */
  const fail = (error: unknown, site: RequestSite): Response => displayFailure(error, log, siteOf(site))

  /** A session's refusal (or failure) ends the route with its answer: Elysia answers a resolve's status() as is. */
  const answered = (response: Response) => status(response.status as 401, response)
  const plugin = new Elysia({ name: 'display-api-kit', seed }).macro({
    /**
     * `mobile: true` (displayRoute's `session: 'mobile'`): a live mobile session token
     * (`Authorization: Bearer`, from POST /account/api/sessions) puts the `principal` in the
     * context; otherwise 401 `invalidSession` with the RFC 6750 challenge.
     */
    // Hooks destructure the context fields they read: Elysia then parses only those per request.
    mobile: {
      async resolve({ request, set, route }: any) {
        const principal = await mobileSession(sessions, request).catch((error: unknown) => fail(error, { request, set, route }))
        return principal instanceof Response ? answered(principal) : { principal }
      },
    },
    /**
     * `web: true`: the account area's session cookie puts the `principal` in the context;
     * otherwise 401 `invalidSession` (no challenge: a browser signs in on the account pages).
     */
    web: {
      async resolve({ request }: any) {
        const principal = await webSession(sessions, request)
        return principal instanceof Response ? answered(principal) : { principal }
      },
    },
  })

  /**
   * A display API handler whose failures are answered by displayFailure: a thrown DisplayRefusal
   * (refuse, validBody, jsonBody) as its `{message, detail, field?}`, anything else as 400, 500 or
   * 503 in the same shape (logged when unexpected).
   */
  function handle(handler: (context: DisplayContext) => Response | Promise<Response>) {
    return async ({ request, body, params, principal, set, route }: any): Promise<Response> => {
      try {
        return await handler({ request, body, params, principal })
      } catch (error) {
        return fail(error, { request, set, route })
      }
    }
  }

  return { plugin, handle, fail }
}

export type DisplayKit = ReturnType<typeof createDisplayKit>
