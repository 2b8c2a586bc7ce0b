/**
 * The authorization server's doors: its metadata (RFC 8414), the protected resources' metadata
 * (RFC 9728), registration (RFC 7591), authorize (checked here, consented to in the account area),
 * token and revocation (RFC 7009). None of them is part of API v1: OAuth answers its own JSON.
 */
import { Elysia } from 'elysia'
import { BodyProblem } from '../../../src/http/body'
import { html, htmlResponse } from '../../../src/http/html'
import { requestIdOf } from '../../../src/http/request-id'
import type { PluginContext } from '../../../src/plugin'
import type { Door } from '../../../src/services/identity'
import { linkOrigin } from '../api'
import { registerClient, registrationAnswer, registrationInput } from './clients'
import { checkAuthorization, exchange, revokeToken, type FlowContext } from './flow'
import { OAuthError, oauthErrorResponse, oauthJson, RESOURCE_PATHS } from './model'

/** Where the consent page is (the account area), with the authorization request's own query. */
export const CONSENT_PATH = '/account/authorize'

const fieldsOf = (body: unknown): Record<string, unknown> => {
  if (body instanceof BodyProblem) throw new OAuthError(400, 'invalid_request', 'The body must be a form (application/x-www-form-urlencoded) of at most 1 MiB.')
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {}
}

async function answering(work: () => Promise<Response>): Promise<Response> {
  try {
    return await work()
  } catch (error) {
    if (error instanceof OAuthError) return oauthErrorResponse(error)
    throw error
  }
}

const errorPage = (message: string) =>
  htmlResponse(
    html`<html lang="en"><head><meta charset="utf-8"><title>Cannot connect this app</title><link rel="stylesheet" href="/account/assets/account.css"></head>
<body><main><h1>Cannot connect this app</h1><p>${message}</p><p>Ask the app's maker, or connect it again from the app.</p></main></body></html>`,
    400,
  )

export function oauthRoutes(context: PluginContext, flow: FlowContext) {
  const origin = (request: Request) => linkOrigin(request, context.isSecureRequest(request), context.publicUrl || undefined)
  const scopeNames = () => flow.scopes.map((scope) => scope.name)

  const resourceMetadata = (door: Door) => (request: Request) => {
    const base = origin(request)
    return oauthJson(
      {
        resource: base + RESOURCE_PATHS[door],
        authorization_servers: [base],
        scopes_supported: scopeNames(),
        bearer_methods_supported: ['header'],
        resource_name: door === 'mcp' ? 'Work tracker (MCP)' : 'Work tracker API v1',
      },
      200,
      { 'cache-control': 'public, max-age=300' },
    )
  }

  return new Elysia({ name: 'oauth' })
    .get(
      '/.well-known/oauth-authorization-server',
      ({ request }) => {
        const base = origin(request)
        return oauthJson(
          {
            issuer: base,
            authorization_endpoint: `${base}/oauth/authorize`,
            token_endpoint: `${base}/oauth/token`,
            registration_endpoint: `${base}/oauth/register`,
            revocation_endpoint: `${base}/oauth/revoke`,
            response_types_supported: ['code'],
            response_modes_supported: ['query'],
            grant_types_supported: ['authorization_code', 'refresh_token'],
            code_challenge_methods_supported: ['S256'],
            token_endpoint_auth_methods_supported: ['none'],
            revocation_endpoint_auth_methods_supported: ['none'],
            scopes_supported: scopeNames(),
            authorization_response_iss_parameter_supported: true,
            client_id_metadata_document_supported: true,
          },
          200,
          { 'cache-control': 'public, max-age=300' },
        )
      },
      { detail: { hide: true } },
    )
    .get('/.well-known/oauth-protected-resource/mcp', ({ request }) => resourceMetadata('mcp')(request), { detail: { hide: true } })
    .get('/.well-known/oauth-protected-resource/api/v1', ({ request }) => resourceMetadata('api')(request), { detail: { hide: true } })
    .post(
      '/oauth/register',
      ({ request, body }) =>
        answering(async () => {
          if (body instanceof BodyProblem) throw new OAuthError(400, 'invalid_client_metadata', 'The body must be a JSON object of at most 1 MiB.')
          const input = registrationInput(body)
          const { client, createdAt } = await registerClient(flow.writes.db, flow.settings, context.clientAddress(request), input)
          return oauthJson(registrationAnswer(client, createdAt), 201)
        }),
      { detail: { hide: true } },
    )
    .get(
      '/oauth/authorize',
      async ({ request, query }) => {
        const checked = await checkAuthorization(flow, query, origin(request))
        if (!checked.ok) return 'fatal' in checked ? errorPage(checked.fatal) : new Response(null, { status: 302, headers: { location: checked.redirect, 'cache-control': 'no-store' } })
        return new Response(null, { status: 302, headers: { location: CONSENT_PATH + new URL(request.url).search, 'cache-control': 'no-store' } })
      },
      { detail: { hide: true } },
    )
    .post(
      '/oauth/token',
      ({ request, body, set }) => answering(async () => oauthJson(await exchange(flow, fieldsOf(body), origin(request), requestIdOf(set)))),
      { detail: { hide: true } },
    )
    .post(
      '/oauth/revoke',
      ({ body, set }) =>
        answering(async () => {
          await revokeToken(flow, fieldsOf(body), requestIdOf(set))
          return oauthJson({})
        }),
      { detail: { hide: true } },
    )
}
