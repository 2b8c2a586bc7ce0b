/**
 * Sign-in continues to `next` only when it stays on this site: the Location of the 303 after the
 * form, and of a signed-in visit to the sign-in page, resolves (as a browser resolves it) to this
 * origin, whatever dot segments, backslashes, encodings or control characters `next` holds.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestService, type TestService, type TestUser } from '../helpers/service'

let api: TestService
let user: TestUser

beforeAll(async () => {
  api = await startTestService({ plugins: ['auth', 'account'] })
  user = await api.createUser(await api.createOrganization(), 'member', { password: 'redirect password 1' })
})
afterAll(() => api.stop())

/** `next` values that once led, or could lead, a browser to another origin. */
const HOSTILE_NEXT: readonly string[] = [
  '//evil.example/phish',
  '///evil.example/phish',
  '/.//evil.example/phish',
  '/..//evil.example/phish',
  '/%2e//evil.example/phish',
  '/%2E%2E//evil.example/phish',
  '/.%2e//evil.example/phish',
  '/././/evil.example/phish',
  '/a/..//evil.example/phish',
  '/.\\/evil.example/phish',
  '/..\\/evil.example/phish',
  '/.\\\\evil.example/phish',
  '/\\evil.example/phish',
  '/\\\\evil.example/phish',
  '\\\\evil.example/phish',
  '/\t/evil.example/phish',
  '/.\t//evil.example/phish',
  '/\n/evil.example/phish',
  '/\r\n/evil.example/phish',
  '/.\n//evil.example/phish',
  ' //evil.example/phish',
  '\t//evil.example/phish',
  '/%2f%2fevil.example/phish',
  '/%5cevil.example/phish',
  '/%5c%5cevil.example/phish',
  '/%09/evil.example/phish',
  'https://evil.example/phish',
  'https:/evil.example/phish',
  'https:evil.example/phish',
  '//evil.example@same.invalid/',
  '/\u0000//evil.example/phish',
  'javascript:alert(1)',
  '/\u3002/evil.example',
  `/${'a'.repeat(3000)}`,
]

const SITE = 'https://worktrack.example'

/** Whether a browser on this site following `location` stays on it. */
function staysOnSite(location: string): boolean {
  return new URL(location, `${SITE}/account/sign-in`).origin === SITE && location.startsWith('/') && !/^\/[/\\]/.test(location) && !/[\u0000-\u0020\u007f]/.test(location)
}

/**
 * The sign-in form posted with `next`; returns the 303's Location (a form the service refuses
 * whole, as one with a NUL character, answers its page without any Location: "/").
 */
async function signInWith(next: string, ip: string): Promise<string> {
  const page = await api.service.fetch(new Request(`http://localhost/account/sign-in?next=${encodeURIComponent(next)}`), { ip })
  const html = await page.text()
  const token = /name="csrf" value="([^"]+)"/.exec(html)![1]!
  const hidden = /name="next" value="([^"]*)"/.exec(html)?.[1]
  if (hidden !== undefined) expect(staysOnSite(hidden.replaceAll('&amp;', '&'))).toBe(true)
  const cookie = page.headers.getSetCookie()[0]!.split(';')[0]!
  // The attacker's own form posts `next` directly, whatever the page carried.
  const response = await api.service.fetch(
    new Request('http://localhost/account/sign-in', {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf: token, email: user.email, password: user.password, next }),
    }),
    { ip },
  )
  if (response.status !== 303) {
    expect({ next, status: response.status, location: response.headers.get('location') }).toEqual({ next, status: 403, location: null })
    return '/'
  }
  return response.headers.get('location')!
}

let address = 0
const nextAddress = () => `192.0.2.${++address}`

describe('sign-in returns only to this site', () => {
  test.each(HOSTILE_NEXT.map((next) => [JSON.stringify(next.length > 40 ? `${next.slice(0, 40)}…` : next), next] as const))('next=%s stays on the site', async (_label, next) => {
    const location = await signInWith(next, nextAddress())
    expect({ next, location, staysOnSite: staysOnSite(location) }).toEqual({ next, location, staysOnSite: true })
  })

  test('a signed-in visit to the sign-in page with a hostile next stays on the site', async () => {
    const location = await signInWith('/account/keys', nextAddress())
    expect(location).toBe('/account/keys')
    const page = await api.service.fetch(new Request('http://localhost/account/sign-in'), { ip: nextAddress() })
    const token = /name="csrf" value="([^"]+)"/.exec(await page.text())![1]!
    const signedIn = await api.service.fetch(
      new Request('http://localhost/account/sign-in', {
        method: 'POST',
        headers: { cookie: page.headers.getSetCookie()[0]!.split(';')[0]!, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrf: token, email: user.email, password: user.password }),
      }),
      { ip: nextAddress() },
    )
    const session = signedIn.headers.getSetCookie().find((line) => line.startsWith('wt_session='))!.split(';')[0]!
    for (const next of HOSTILE_NEXT) {
      const response = await api.service.fetch(new Request(`http://localhost/account/sign-in?next=${encodeURIComponent(next)}`, { headers: { cookie: session } }))
      expect(response.status).toBe(303)
      const location = response.headers.get('location')!
      expect({ next, location, staysOnSite: staysOnSite(location) }).toEqual({ next, location, staysOnSite: true })
    }
  })

  test.each([
    ['/pages/ops?kiosk=1', '/pages/ops?kiosk=1'],
    ['/pages/a%20b#top', '/pages/a%20b#top'],
    ['/account/keys', '/account/keys'],
    ['/pages/ops?back=//evil.example', '/pages/ops?back=//evil.example'],
    ['/pages/./ops', '/pages/ops'],
    ['/pages/x/../ops?kiosk=1', '/pages/ops?kiosk=1'],
    ['/pages/caf\u00e9', '/pages/caf%C3%A9'],
  ])('a path of this site (%s) is followed', async (next, expected) => {
    expect(await signInWith(next, nextAddress())).toBe(expected)
  })
})
