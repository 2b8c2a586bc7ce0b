/**
 * The API v1 kit a plugin's routes `.use()`: the `scopes` macro (Bearer key, then scopes, then
 * the body: the documented order of checks) and the envelope around every result.
 */
import { Elysia } from 'elysia'
import { throwIfBodyProblem } from './body'
import { envelope } from './envelope'
import { insufficientScope } from './errors'
import { requestIdOf } from './request-id'
import { actorOf, AuthenticatorRef, type Actor } from '../services/auth'
import type { ServiceRegistry } from '../services/registry'

/** Builds the kit for one app; `seed` keeps two apps in one process apart. */
export function createV1Kit(services: ServiceRegistry, seed: string) {
  return new Elysia({ name: 'api-v1', seed })
    .macro({
      /**
       * `scopes: ['teams:read']` on a route: requires a live API key holding every listed scope
       * (an empty list: any live key) and puts the `actor` in the handler's context.
       */
      scopes: (required: readonly string[]) => ({
        async transform(context: any) {
          const principal = await services.get(AuthenticatorRef).authenticateBearer(context.request.headers.get('authorization'))
          const missing = required.filter((scope) => !principal.scopes.has(scope))
          if (missing.length) throw insufficientScope(missing)
          throwIfBodyProblem(context.body)
          context.actor = actorOf(principal, 'rest', requestIdOf(context.set))
        },
        resolve: (context: any) => ({ actor: context.actor as Actor }),
        detail: {
          security: [{ bearerAuth: [] }],
          description: required.length ? `Requires the scope(s): \`${required.join('`, `')}\`.` : 'Requires any valid API key.',
        },
      }),
    })
    .onAfterHandle({ as: 'scoped' }, ({ responseValue, set }) => {
      if (responseValue instanceof Response) return responseValue
      return envelope(responseValue, requestIdOf(set))
    })
}

export type V1Kit = ReturnType<typeof createV1Kit>
