/**
 * Server-rendered HTML without a template engine: `html` is a tagged template that escapes every
 * interpolated value unless it is already Html (from another `html` call or `trusted`).
 */

export class Html {
  constructor(readonly value: string) {}
  toString() {
    return this.value
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' }

/** Escapes text for use in element content and quoted attribute values. */
export const escapeHtml = (text: string) => text.replace(/[&<>"'`]/g, (character) => ESCAPES[character]!)

function render(value: unknown): string {
  if (value instanceof Html) return value.value
  if (Array.isArray(value)) return value.map(render).join('')
  if (value === null || value === undefined || value === false) return ''
  return escapeHtml(String(value))
}

/** `html\`<p>${name}</p>\``: values are escaped; arrays of Html are joined. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!
  values.forEach((value, i) => (out += render(value) + strings[i + 1]!))
  return new Html(out)
}

/** Marks a constant string of markup as safe (never user data). */
export const trusted = (markup: string) => new Html(markup)

/** Headers every HTML page carries: no inline script, no framing, nothing cached. */
export const PAGE_HEADERS: Record<string, string> = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
}

/** An HTML response with the page headers. */
export function htmlResponse(body: Html, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(`<!doctype html>\n${body.value}`, { status, headers: { ...PAGE_HEADERS, ...headers } })
}
