/**
 * The account area as JSON under `/account/api/`, for mobile apps: a Bearer session token from
 * `POST /account/api/sessions`, answers in the API v1 envelope.
 */
import { Elysia, t } from 'elysia'
import type { Database } from '../../src/db'
import { envelope } from '../../src/http/envelope'
import { pageQuery, pageRequest } from '../../src/http/pagination'
import { requestIdOf } from '../../src/http/request-id'
import type { PluginContext } from '../../src/plugin'
import { ApiKeyManagerRef, SessionsRef, type Principal } from '../../src/services/auth'
import { DisplayAccountsRef } from '../../src/services/display'
import { notFound, unauthorized } from '../../src/http/errors'
import { signIn } from './service'
import type { ThrottlePolicy } from './throttle'

const bearer = (request: Request) => /^Bearer[ ]+(\S+)[ ]*$/i.exec(request.headers.get('authorization') ?? '')?.[1]
const tags = ['Account']

export function accountApi(context: PluginContext, db: Database, policy: ThrottlePolicy) {
  const { services } = context
  const sessions = services.get(SessionsRef)
  const keys = services.get(ApiKeyManagerRef)

  return new Elysia({ name: 'account-api', prefix: '/account/api' })
    .macro({
      /** `session: true`: a live mobile session token in `Authorization: Bearer …`. */
      session: (required: boolean) => ({
        async transform(ctx: any) {
          if (!required) return
          const token = bearer(ctx.request)
          if (!token) throw unauthorized('A session token is required (POST /account/api/sessions).')
          ctx.principal = await sessions.authenticate(token, 'mobile')
          ctx.sessionToken = token
        },
        resolve: (ctx: any) => ({ principal: ctx.principal as Principal & { sessionId: string }, sessionToken: ctx.sessionToken as string }),
      }),
    })
    .onAfterHandle({ as: 'local' }, ({ responseValue, set }) => {
      if (responseValue instanceof Response) return responseValue
      return envelope(responseValue, requestIdOf(set))
    })
    .post(
      '/sessions',
      async ({ request, body, set }) => {
        const started = await signIn(db, sessions, policy, {
          email: body.email,
          password: body.password,
          address: context.clientAddress(request),
          kind: 'mobile',
          requestId: requestIdOf(set),
        })
        set.status = 201
        set.headers['cache-control'] = 'no-store'
        return { token: started.token, expiresAt: started.expiresAt.toISOString() }
      },
      {
        body: t.Object({ email: t.String({ maxLength: 254 }), password: t.String({ maxLength: 1024 }) }, { additionalProperties: false }),
        detail: { tags, summary: 'Sign in for a mobile app: a Bearer session token (shown once). 401 alike for unknown email and wrong password; 429 when throttled.' },
      },
    )
    .delete(
      '/sessions/current',
      async ({ sessionToken, set }) => {
        await sessions.end(sessionToken, requestIdOf(set))
        return { revoked: true }
      },
      { session: true, detail: { tags, summary: 'Sign out: the session token stops working.' } },
    )
    .get('/keys', ({ principal, query }) => keys.list(principal.user.id, pageRequest(query)), {
      session: true,
      query: t.Object(pageQuery()),
      detail: { tags, summary: 'Your API keys, newest first.' },
    })
    .post(
      '/keys',
      async ({ principal, body, set }) => {
        const created = await keys.create(
          { organizationId: principal.user.organizationId, userId: principal.user.id, apiKeyId: null, via: 'account', requestId: requestIdOf(set) },
          principal.user.id,
          body,
        )
        set.status = 201
        set.headers['cache-control'] = 'no-store'
        return created
      },
      { session: true, detail: { tags, summary: 'Create an API key `{name, scopes, expiresAt?}`; the secret is returned this once.' } },
    )
    .delete(
      '/keys/:keyId',
      ({ principal, params, set }) =>
        keys.revoke(
          { organizationId: principal.user.organizationId, userId: principal.user.id, apiKeyId: null, via: 'account', requestId: requestIdOf(set) },
          principal.user.id,
          params.keyId,
        ),
      { session: true, detail: { tags, summary: 'Revoke one of your keys; it stops working on every instance at once.' } },
    )
    .get(
      '/display',
      async ({ principal }) => {
        const display = services.find(DisplayAccountsRef)
        if (!display) throw notFound('There is no display account here.')
        return display.summary(principal.user.id)
      },
      { session: true, detail: { tags, summary: "Your display account: key prefix and today's usage." } },
    )
    .post(
      '/display/rotate',
      async ({ principal, set }) => {
        const display = services.find(DisplayAccountsRef)
        if (!display) throw notFound('There is no display account here.')
        set.headers['cache-control'] = 'no-store'
        return display.rotate(
          { organizationId: principal.user.organizationId, userId: principal.user.id, apiKeyId: null, via: 'account', requestId: requestIdOf(set) },
          principal.user.id,
        )
      },
      { session: true, detail: { tags, summary: 'Replace your display key: the new one is returned once, the old one stops at once.' } },
    )
}
