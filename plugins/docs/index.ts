/**
 * The `docs` plugin: the OpenAPI document at `/docs/json`, generated from the route schemas of
 * the enabled plugins, and Swagger UI at `/docs`, served from the local `swagger-ui-dist`
 * package (nothing is fetched from a CDN).
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { swagger } from '@elysiajs/swagger'
import { Elysia } from 'elysia'
import { PAGE_HEADERS } from '../../src/http/html'
import { definePlugin } from '../../src/plugin'
import { description } from './description'
import { tidyDocument } from './tidy'

const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
}

let loaded: Map<string, { body: Buffer; type: string }> | undefined

/** The Swagger UI files (~1.9 MB), read once per process, on the first service that serves them. */
function loadAssets(): Map<string, { body: Buffer; type: string }> {
  if (loaded) return loaded
  const root = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))
  loaded = new Map(Object.entries(ASSETS).map(([name, type]) => [name, { body: readFileSync(join(root, name)), type }]))
  return loaded
}

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <title>Worktrack API</title>
  <link rel="icon" href="/docs/assets/favicon-32x32.png" />
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css" />
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/assets/docs.js"></script>
</body>
</html>`

/**
 * Starts Swagger UI (a file, so the page needs no inline script). A key typed into "Authorize"
 * lives in this tab's memory only: no persistAuthorization, so nothing reaches local storage.
 */
const INIT = `window.ui = SwaggerUIBundle({ url: '/docs/json', dom_id: '#swagger-ui', persistAuthorization: false })\n`

/**
 * The account pages' headers (no framing, no sniffing, nothing from other origins, no inline
 * script); Swagger UI sets inline style attributes, so styles alone may be inline.
 */
const DOCS_HEADERS = {
  ...PAGE_HEADERS,
  'content-security-policy': PAGE_HEADERS['content-security-policy']!.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'"),
}

export default definePlugin({
  name: 'docs',
  description: 'OpenAPI document (/docs/json) and Swagger UI (/docs).',
  links: [{ href: '/docs', title: 'API documentation', description: 'the OpenAPI reference of API v1, the display API and the account API, to read and try' }],

  routes: ({ tags, changes }) => {
    const assets = loadAssets()
    // The change feed's catalog (what webhooks can subscribe to), from the enabled plugins' manifests.
    const events = changes.types.length
      ? `\n\n**Change events** (webhook \`events\`, or \`*\`): ${changes.types.map((type) => `\`${type.name}\``).join(', ')}. ` +
        'Payload `{type, id, occurredAt, organizationId, projectId, actor: {userId, via}, data, previous?}`, `data` being the resource as API v1 returns it (after the change; before it for a delete), and `previous`, on `*.updated` events, the old values of the fields that changed (and only those).'
      : ''
    return new Elysia({ name: 'docs' })
      .onAfterHandle(({ path, responseValue }) => {
        if (path === '/docs/json') return tidyDocument(responseValue as Record<string, unknown>)
      })
      .use(
        swagger({
          provider: 'swagger-ui',
          // The package's own page (inline script, Swagger UI from a CDN) is registered at /docs
          // and replaced by ours below: the later route wins, so it is never served.
          path: '/docs',
          specPath: '/docs/json',
          exclude: [/^\/docs/],
          documentation: {
            info: { title: 'Worktrack API', version: '1', description: description + events },
            tags: [{ name: 'Operations', description: 'Liveness and readiness.' }, ...tags],
            components: {
              securitySchemes: {
                bearerAuth: {
                  type: 'http',
                  scheme: 'bearer',
                  bearerFormat: 'wtk_ + 36 base62 characters + 6-character checksum',
                  description: 'An API key created in the account area or by the operator CLI.',
                },
                sessionToken: {
                  type: 'http',
                  scheme: 'bearer',
                  bearerFormat: 'wts_ + random characters',
                  description: 'A mobile session token from POST /account/api/sessions (email and password).',
                },
              },
            },
          },
        }),
      )
      .get('/docs', () => new Response(PAGE, { headers: DOCS_HEADERS }), { detail: { hide: true } })
      .get('/docs/assets/docs.js', () => new Response(INIT, { headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-cache' } }), {
        detail: { hide: true },
      })
      .get(
        '/docs/assets/:name',
        ({ params }) => {
          const asset = assets.get(params.name)
          if (!asset) return new Response('Not found', { status: 404 })
          return new Response(asset.body as unknown as BodyInit, {
            headers: { 'content-type': asset.type, 'cache-control': 'public, max-age=86400' },
          })
        },
        { detail: { hide: true } },
      )
  },
})
