/**
 * The account area as JSON under `/account/api/`, for mobile apps: a Bearer session token from
 * `POST /account/api/sessions`, answers in the API v1 envelope.
 */
import { Elysia, t, type TSchema } from 'elysia'
import { bearerToken } from '../../src/http/credentials'
import { Envelope, enveloping, errorResponse, PageEnvelope } from '../../src/http/envelope'
import { Timestamp, UuidString } from '../../src/http/models'
import { pageQuery, pageRequest } from '../../src/http/pagination'
import { requestIdOf } from '../../src/http/request-id'
import type { PluginContext } from '../../src/plugin'
import { actorOf, type Principal } from '../../src/services/identity'
import { notFound, unauthorized } from '../../src/http/errors'
import { EMAIL_MAX, KEY_NAME_MAX, PASSWORD_MAX } from '../auth/api'
import type { AccountServices } from './service'

const security = [{ sessionToken: [] }]

const ApiKey = t.Object(
  {
    id: UuidString(),
    name: t.String(),
    prefix: t.String({ description: 'The first 8 characters of the secret.' }),
    scopes: t.Array(t.String()),
    ownerId: UuidString(),
    createdAt: Timestamp(),
    lastUsedAt: t.Union([Timestamp(), t.Null()]),
    expiresAt: t.Union([Timestamp(), t.Null()]),
    revokedAt: t.Union([Timestamp(), t.Null()]),
  },
  { title: 'ApiKey' },
)

const DisplayAccount = t.Object(
  {
    prefix: t.Union([t.String(), t.Null()], { description: 'The first 8 characters of the `dpk_…` key; null without a display account.' }),
    dailyLimit: t.Integer({ minimum: 0 }),
    usedToday: t.Integer({ minimum: 0 }),
    resetsAt: Timestamp({ description: 'The next UTC midnight, when the count starts again.' }),
  },
  { title: 'DisplayAccount' },
)

/** Error answers of the account API (API v1 envelope), by status: the shared table's wording unless the account area means more. */
const ERRORS = {
  400: errorResponse(400),
  401: errorResponse(401, 'UNAUTHORIZED: no live mobile session token (signing in: a wrong email or password, the same answer for both).'),
  404: errorResponse(404, 'NOT_FOUND: no such key of yours, or no display account here.'),
  409: errorResponse(409, 'CONFLICT: you already hold the most active API keys allowed (auth.maxKeysPerUser); revoke one first.'),
  429: errorResponse(429, 'RATE_LIMITED: too many failed sign-ins for this email from this address, for the email, or for the address; see Retry-After.'),
  500: errorResponse(500),
  503: errorResponse(503, 'UNAVAILABLE: the database cannot answer right now, or (signing in) every password-hashing slot is busy; see Retry-After.'),
}
type ErrorStatus = keyof typeof ERRORS
/** The `response` map of an account API route: `success` under `status`, plus the listed errors and 500/503. */
const answers = <S extends TSchema>(success: S, status: 200 | 201, errors: ErrorStatus[]) =>
  Object.fromEntries([[status, success], ...[...errors, 500, 503].map((code) => [code, ERRORS[code as ErrorStatus]])]) as Record<number, TSchema>

const tags = ['Account']

export function accountApi(context: PluginContext, account: AccountServices) {
  const { sessions, keys, display } = account

  return new Elysia({ name: 'account-api', prefix: '/account/api' })
    .macro({
      /** `session: true`: a live mobile session token in `Authorization: Bearer …`. */
      session: (required: boolean) => ({
        async transform(ctx: any) {
          if (!required) return
          const token = bearerToken(ctx.request.headers.get('authorization'))
          if (!token) throw unauthorized('A session token is required (POST /account/api/sessions).')
          ctx.principal = await sessions.authenticate(token, 'mobile')
          ctx.sessionToken = token
        },
        resolve: (ctx: any) => ({ principal: ctx.principal as Principal & { sessionId: string }, sessionToken: ctx.sessionToken as string }),
        detail: { security },
      }),
    })
    .onAfterHandle({ as: 'local' }, enveloping())
    .post(
      '/sessions',
      async ({ request, body, set }) => {
        const started = await account.signIn({
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
        body: t.Object({ email: t.String({ maxLength: EMAIL_MAX }), password: t.String({ maxLength: PASSWORD_MAX }) }, { additionalProperties: false }),
        response: answers(Envelope(t.Object({ token: t.String({ description: 'wts_…, shown once: send it as `Authorization: Bearer`.' }), expiresAt: Timestamp() })), 201, [400, 401, 429]),
        detail: { tags, security: [], summary: 'Sign in for a mobile app: a Bearer session token (shown once). 401 alike for unknown email and wrong password; 429 when throttled.' },
      },
    )
    .delete(
      '/sessions/current',
      async ({ sessionToken, set }) => {
        await sessions.end(sessionToken, requestIdOf(set))
        return { revoked: true }
      },
      { session: true, response: answers(Envelope(t.Object({ revoked: t.Literal(true) })), 200, [401]), detail: { tags, summary: 'Sign out: the session token stops working.' } },
    )
    .get('/keys', ({ principal, query }) => keys.list(principal.user, pageRequest(query, 20, 'filters')), {
      session: true,
      query: t.Object(pageQuery(20, 'filters')),
      response: answers(PageEnvelope(ApiKey), 200, [400, 401]),
      detail: { tags, summary: 'Your API keys, newest first.' },
    })
    .post(
      '/keys',
      async ({ principal, body, set }) => {
        const created = await keys.create(
          actorOf(principal, 'account', requestIdOf(set)),
          principal.user.id,
          body,
        )
        set.status = 201
        set.headers['cache-control'] = 'no-store'
        return created
      },
      {
        session: true,
        // What the key service validates (ApiKeyInput of the auth plugin), so clients can send it.
        body: t.Object(
          {
            name: t.String({ minLength: 1, maxLength: KEY_NAME_MAX }),
            scopes: t.Array(t.String({ minLength: 1, maxLength: 64 }), { maxItems: 64, uniqueItems: true, description: 'Scope names, e.g. `work_items:read`.' }),
            expiresAt: t.Optional(t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'When the key stops working; null or absent: never.' })),
          },
          { additionalProperties: false },
        ),
        response: answers(Envelope(t.Object({ key: ApiKey, secret: t.String({ description: 'wtk_…, shown this once.' }) })), 201, [400, 401, 409]),
        detail: { tags, summary: 'Create an API key `{name, scopes, expiresAt?}`; the secret is returned this once.' },
      },
    )
    .delete(
      '/keys/:keyId',
      ({ principal, params, set }) =>
        keys.revoke(
          actorOf(principal, 'account', requestIdOf(set)),
          principal.user.id,
          params.keyId,
        ),
      { session: true, response: answers(Envelope(ApiKey), 200, [401, 404]), detail: { tags, summary: 'Revoke one of your keys; it stops working on every instance at once.' } },
    )
    .get(
      '/display',
      async ({ principal }) => {
        if (!display) throw notFound('There is no display account here.')
        return display.summary(principal.user)
      },
      { session: true, response: answers(Envelope(DisplayAccount), 200, [401, 404]), detail: { tags, summary: "Your display account: key prefix and today's usage." } },
    )
    .post(
      '/display/rotate',
      async ({ principal, set }) => {
        if (!display) throw notFound('There is no display account here.')
        set.headers['cache-control'] = 'no-store'
        return display.rotate(
          actorOf(principal, 'account', requestIdOf(set)),
          principal.user.id,
        )
      },
      {
        session: true,
        response: answers(Envelope(t.Object({ apiKey: t.String({ description: 'dpk_…, shown this once.' }), prefix: t.String() })), 200, [401, 404]),
        detail: { tags, summary: 'Replace your display key: the new one is returned once, the old one stops at once.' },
      },
    )
}
