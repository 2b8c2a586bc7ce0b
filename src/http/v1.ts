/**
 * The API v1 kit a plugin's routes `.use()`: the `scopes` macro (Bearer key, then scopes, then
 * the body: the documented order of checks), Idempotency-Key on POST (the record commits with the
 * change: see idempotency.ts), and the envelope around every result with the headers
 * (conventions.ts; the X-RateLimit-* headers come from the Bearer check).
 */
import { Elysia } from 'elysia'
import { actorOf, AuthenticatorRef, isScoped, requireScopes, type Actor, type Principal } from '../services/identity'
import type { ServiceRegistry } from '../services/registry'
import { Replay, type Writes } from '../writes'
import { Answer } from './answer'
import { throwIfBodyProblem } from './body'
import { throwIfNotJson } from './conventions'
import { bearerToken } from './credentials'
import { enveloping } from './envelope'
import { badRequest } from './errors'
import { IDEMPOTENCY_HEADER, idempotentRequest, storedAnswer, type IdempotentRequest } from './idempotency'
import { requestIdOf } from './request-id'

/**
 * PostgreSQL text cannot hold U+0000 (`?q=a%00b`): refused as input before any statement, naming
 * the parameter, as the body parser refuses it in JSON.
 */
function throwIfNulInQuery(query: Record<string, unknown> | undefined): void {
  for (const [name, value] of Object.entries(query ?? {}))
    if ((typeof value === 'string' && value.includes('\u0000')) || (Array.isArray(value) && value.some((item) => typeof item === 'string' && item.includes('\u0000'))))
      throw badRequest(`The query parameter ${name} contains the character U+0000 (NUL), which text cannot hold.`, name)
}

/**
 * After the credential: the body and query checks every route runs, then the `actor` (merged into
 * the context by Elysia).
 */
function admitted(principal: Principal, request: Request, body: unknown, query: Record<string, unknown> | undefined, set: { headers: Record<string, unknown> }) {
  throwIfNotJson(request, body)
  throwIfBodyProblem(body)
  throwIfNulInQuery(query)
  return { actor: actorOf(principal, 'rest', requestIdOf(set as never)) }
}

/** Builds the kit for one app; `seed` keeps two apps in one process apart. */
export function createV1Kit(services: ServiceRegistry, writes: Writes, seed: string) {
  /**
   * `idempotency`: a POST's Idempotency-Key, which the route hands to the service's write
   * (its unit of work records the answer); the answer is sealed under a key derived from the
   * credential and the Idempotency-Key (idempotency.ts).
   */
  function withIdempotency({ actor, request, path, body }: any) {
    // POSTs, and the bulk PATCH (one transaction whose answer is recorded with it).
    const key = request.method === 'POST' || (request.method === 'PATCH' && path.endsWith('/bulk')) ? request.headers.get(IDEMPOTENCY_HEADER) : null
    const idempotency = key === null || !actor.apiKeyId ? undefined : idempotentRequest(actor, bearerToken(request.headers.get('authorization'))!, key, path, body)
    return { actor: actor as Actor, idempotency: idempotency as IdempotentRequest | undefined }
  }
  async function replayIfAnswered({ idempotency }: any) {
    if (!idempotency) return
    const answer = await storedAnswer(writes.db, idempotency)
    if (answer) return new Replay(answer.value, answer.status, answer.location)
  }

  return new Elysia({ name: 'api-v1', seed })
    .macro({
      /**
       * `scopes: ['teams:read']` on a route: requires a live API key holding every listed scope
       * (an empty list: any live key) and puts the `actor` in the handler's context.
       */
      // Every hook names the context fields it reads (destructured): Elysia compiles each route
      // to parse only what its hooks use, and a hook taking the whole context made every request
      // parse cookies and copy its headers into an object.
      scopes: (required: readonly string[]) => ({
        async transform({ request, body, query, set }: any): Promise<any> {
          const principal = await services.get(AuthenticatorRef).authenticateBearer(request.headers.get('authorization'), set.headers, 'api')
          requireScopes(principal, required)
          return admitted(principal, request, body, query, set)
        },
        resolve: withIdempotency,
        beforeHandle: replayIfAnswered,
        detail: {
          // The scopes in the requirement too, so a generated client (and Swagger UI) can read them.
          security: [{ bearerAuth: [...required] }],
          description: required.length ? `Requires the scope(s): \`${required.join('`, `')}\`.` : 'Requires any valid API key.',
        },
      }),
      /**
       * `uploads: ['projects:write']` on a route that reads its body itself, as a stream (an
       * import's NDJSON or CSV, which the service's parser leaves unread): `scopes`
       * without the JSON body rule (the route checks its own types) and without Idempotency-Key.
       */
      uploads: (required: readonly string[]) => ({
        async transform({ request, query, set }: any): Promise<any> {
          const principal = await services.get(AuthenticatorRef).authenticateBearer(request.headers.get('authorization'), set.headers, 'api')
          requireScopes(principal, required)
          throwIfNulInQuery(query)
          return { actor: actorOf(principal, 'rest', requestIdOf(set as never)) }
        },
        resolve({ actor }: any) {
          return { actor: actor as Actor }
        },
        detail: {
          security: [{ bearerAuth: [...required] }],
          description: `Requires the scope(s): \`${required.join('`, `')}\`.`,
        },
      }),
      /**
       * `signedIn: true` on a route about the caller themselves: a live API key (whatever its
       * scopes) or a mobile session token (POST /account/api/sessions), then the body; the
       * `actor` in the handler's context.
       */
      signedIn: (_on: true) => ({
        async transform({ request, body, query, set }: any): Promise<any> {
          const principal = await services.get(AuthenticatorRef).authenticateUser(request.headers.get('authorization'), set.headers, 'api')
          return admitted(principal, request, body, query, set)
        },
        resolve({ actor }: any) {
          return { actor: actor as Actor }
        },
        detail: {
          security: [{ bearerAuth: [] }, { sessionToken: [] }],
          description: 'Requires any valid API key, or a mobile session token (POST /account/api/sessions).',
        },
      }),
      /**
       * `scopesOrSession: ['notifications:read']` on a route about the caller's own things that
       * their app reads too: an API key holding every listed scope, or a mobile session token
       * (the user's own app, which holds no scopes); the `actor` in the handler's context.
       */
      scopesOrSession: (required: readonly string[]) => ({
        async transform({ request, body, query, set }: any): Promise<any> {
          const principal = await services.get(AuthenticatorRef).authenticateUser(request.headers.get('authorization'), set.headers, 'api')
          if (isScoped(principal)) requireScopes(principal, required)
          return admitted(principal, request, body, query, set)
        },
        resolve: withIdempotency,
        beforeHandle: replayIfAnswered,
        detail: {
          security: [{ bearerAuth: [...required] }, { sessionToken: [] }],
          description: `Requires an API key with the scope(s) \`${required.join('`, `')}\`, or a mobile session token (POST /account/api/sessions).`,
        },
      }),
    })
    .onAfterHandle(
      { as: 'scoped' },
      enveloping(async ({ responseValue, set, idempotency }) => {
        if (responseValue instanceof Replay) {
          set.headers['idempotent-replayed'] = 'true'
          return responseValue
        }
        // A POST that changed nothing through a unit of work (nothing to commit with): recorded on its own.
        if (idempotency && !idempotency.claimed) await writes.recordUnchanged(idempotency, responseValue instanceof Answer ? responseValue : new Answer(responseValue ?? null, 200))
        return responseValue
      }, true),
    )
}

export type V1Kit = ReturnType<typeof createV1Kit>
