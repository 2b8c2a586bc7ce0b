/**
 * `GET /`: what a person or a client finds at the service's root: a small page linking
 * the ways in the enabled plugins declare (API documentation, account area, dashboards), in the
 * look of the account area (src/http/page-style.ts), or the same as JSON for
 * `Accept: application/json`. And the favicon every browser tab asks for.
 */
import type { LandingLink } from '../plugin'
import { html, htmlResponse } from './html'
import { PAGE_CSS_PATH } from './page-style'

/** True when the client asks for JSON rather than a page (an explicit JSON type, and no HTML). */
export function wantsJson(accept: string | null): boolean {
  if (!accept) return false
  const types = accept.toLowerCase()
  return /\bapplication\/(?:[\w.+-]+\+)?json\b/.test(types) && !types.includes('text/html')
}

/** The landing answer for `request`, built once per representation. */
export function createLanding(links: readonly LandingLink[]) {
  const json = JSON.stringify({
    data: { name: 'worktrack', links: links.map(({ href, title, description }) => ({ href, title, description })), health: '/health', ready: '/ready' },
    errors: [],
    meta: {},
  })
  const page = html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="/favicon.ico" type="image/svg+xml">
<link rel="stylesheet" href="${PAGE_CSS_PATH}">
<title>Worktrack</title>
</head>
<body>
<header><strong>Worktrack</strong></header>
<main>
<h1>Worktrack</h1>
<p class="muted">Work tracking and live dashboards.</p>
<ul class="cards">
${links.map((link) => html`<li class="card"><a href="${link.href}">${link.title}</a><br><span class="muted">${link.description}</span></li>\n`)}</ul>
<p class="muted"><a href="/health">Health</a> · <a href="/ready">Readiness</a></p>
</main>
</body>
</html>`
  return (request: Request): Response =>
    wantsJson(request.headers.get('accept'))
      ? new Response(json, { headers: { 'content-type': 'application/json; charset=utf-8', vary: 'Accept' } })
      : htmlResponse(page, 200, { vary: 'Accept' })
}

/** A 32×32 mark (a check in a rounded square) as SVG, which every current browser takes as an icon. */
const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#2f5bd3"/><path d="M9 16.5l4.5 4.5L23 11" fill="none" stroke="#fff" stroke-width="3.2" stroke-linecap="round" stroke-linejoin="round"/></svg>`

export const faviconResponse = () =>
  new Response(FAVICON, { headers: { 'content-type': 'image/svg+xml', 'cache-control': 'public, max-age=86400', 'x-content-type-options': 'nosniff' } })
