/**
 * The API v1 kit a plugin's routes `.use()`: the `scopes` macro (Bearer key, then scopes, then
 * the body: the documented order of checks), Idempotency-Key on POST (the record commits with the
 * change: see idempotency.ts), and the envelope around every result with SPEC §10's headers
 * (conventions.ts; the X-RateLimit-* headers come from the Bearer check).
 */
import { Elysia } from 'elysia'
import type { Database } from '../db'
import { actorOf, AuthenticatorRef, requireScopes, type Actor } from '../services/identity'
import type { ServiceRegistry } from '../services/registry'
import { throwIfBodyProblem } from './body'
import { throwIfNotJson } from './conventions'
import { enveloping } from './envelope'
import { badRequest } from './errors'
import { claimIdempotencyKey, IDEMPOTENCY_HEADER, idempotentRequest, recordAnswer, storedAnswer, type IdempotentRequest } from './idempotency'
import { requestIdOf } from './request-id'

/** What a replayed request answers instead of running its handler again. */
class Replay {
  constructor(
    readonly status: number,
    readonly data: unknown,
  ) {}
}

/**
 * PostgreSQL text cannot hold U+0000 (`?q=a%00b`): refused as input before any statement, naming
 * the parameter, as the body parser refuses it in JSON.
 */
function throwIfNulInQuery(query: Record<string, unknown> | undefined): void {
  for (const [name, value] of Object.entries(query ?? {}))
    if ((typeof value === 'string' && value.includes('\u0000')) || (Array.isArray(value) && value.some((item) => typeof item === 'string' && item.includes('\u0000'))))
      throw badRequest(`The query parameter ${name} contains the character U+0000 (NUL), which text cannot hold.`, name)
}

/** Builds the kit for one app; `seed` keeps two apps in one process apart. */
export function createV1Kit(services: ServiceRegistry, db: Database, seed: string) {
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
          const principal = await services.get(AuthenticatorRef).authenticateBearer(request.headers.get('authorization'), set.headers)
          requireScopes(principal, required)
          throwIfNotJson(request, body)
          throwIfBodyProblem(body)
          throwIfNulInQuery(query)
          // Merged into the context by Elysia.
          return { actor: actorOf(principal, 'rest', requestIdOf(set)) }
        },
        resolve: ({ actor }: any) => ({ actor: actor as Actor }),
        async beforeHandle({ request, actor, path, body, set }: any) {
          if (request.method !== 'POST') return
          const key = request.headers.get(IDEMPOTENCY_HEADER)
          if (key === null || !actor.apiKeyId) return
          const idempotent = idempotentRequest(actor, key, path, body, () => Number(set.status ?? 200))
          const answer = await storedAnswer(db, idempotent)
          if (answer) return new Replay(answer.status, answer.response)
          actor.idempotency = idempotent
        },
        detail: {
          security: [{ bearerAuth: [] }],
          description: required.length ? `Requires the scope(s): \`${required.join('`, `')}\`.` : 'Requires any valid API key.',
        },
      }),
    })
    .onAfterHandle(
      { as: 'scoped' },
      enveloping(async ({ responseValue, set, actor }) => {
        const request = actor?.idempotency as IdempotentRequest | undefined
        const replay = responseValue instanceof Replay ? responseValue : request?.replayed ? new Replay(request.replayed.status, responseValue) : undefined
        if (replay) {
          set.status = replay.status
          set.headers['idempotent-replayed'] = 'true'
          return replay.data
        }
        // A POST that changed nothing through `mutate` (nothing to commit with): recorded on its own.
        if (request && !request.claimed) await db.transaction(async (tx) => (await claimIdempotencyKey(tx, request)) && recordAnswer(tx, request, responseValue ?? null))
        return responseValue
      }, true),
    )
}

export type V1Kit = ReturnType<typeof createV1Kit>
