/**
 * Single sign-on with OpenID Connect against a real provider (oidc-provider, tests/helpers/
 * oidc-provider.ts) and the app on a real port, driven by a cookie-keeping client that follows
 * redirects across both origins: the authorization request (PKCE S256, state, nonce, the flow's
 * cookie), the callback's checks (state, code, ID token, nonce, audience, issuer, expiry), who may
 * sign in (verified e-mail, allowed domains, the provider's organization, active users only),
 * users created on first sign-in, password sign-in turned off, replays, and unknown providers.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { registry } from '../../plugins'
import { runCommand } from '../../src/cli'
import { CookieJarBrowser, DENY, startOidcProvider, type AccountClaims, type TestOidcProvider, type Visit } from '../helpers/oidc-provider'
import { createTestDatabase, sqlOn, type TestDatabase } from '../helpers/database'
import { freePort, listen, type Listening } from '../helpers/http'
import { startTestService, type TestService, type TestUser } from '../helpers/service'

let idp: TestOidcProvider
/** A provider that puts only `sub` in the ID token when it issues an access token (the claims are at userinfo). */
let conformant: TestOidcProvider
let database: TestDatabase
let api: TestService
let site: Listening
/** Organizations: the SSO one, another, one whose provider creates users, and one without password sign-in. */
const org = { acme: '', other: '', auto: '', strict: '' }
const sql = sqlOn(() => api)

const SECRET = 'a client secret long enough'

beforeAll(async () => {
  idp = await startOidcProvider()
  conformant = await startOidcProvider({ conformIdTokenClaims: true })
  database = await createTestDatabase()
  // The providers' configuration names organizations: made first, by a service on the same database.
  const setup = await startTestService({ plugins: ['auth'], database })
  org.acme = await setup.createOrganization('Acme')
  org.other = await setup.createOrganization('Other')
  org.auto = await setup.createOrganization('Auto')
  org.strict = await setup.createOrganization('Strict')
  await setup.stop()
  const provider = (id: string, name: string, organizationId: string, more: Record<string, unknown> = {}) => ({
    id,
    name,
    issuer: idp.issuer,
    clientId: `worktrack-${id}`,
    clientSecret: SECRET,
    organizationId,
    ...more,
  })
  const providers = [
    provider('acme', 'Acme ID', org.acme),
    provider('acme-domains', 'Acme Domains', org.acme, { allowedDomains: ['Example.COM'] }),
    provider('auto', 'Auto ID', org.auto, { createUsers: true, defaultRole: 'administrator' }),
    provider('auto-member', 'Auto Members', org.auto, { createUsers: true }),
    provider('strict', 'Strict ID', org.strict),
    { ...provider('conformant', 'Conformant ID', org.acme), issuer: conformant.issuer },
    { ...provider('offline', 'Offline ID', org.acme), issuer: `http://127.0.0.1:${await freePort()}` },
  ]
  api = await startTestService({ database, config: { auth: { oidc: { providers } } } })
  site = listen(api, 'localhost')
  for (const each of providers)
    await (each.issuer === conformant.issuer ? conformant : idp).addClient({ clientId: each.clientId, clientSecret: SECRET, redirectUris: [`${site.url}/account/sso/${each.id}/callback`] })
})
afterAll(async () => {
  site?.stop()
  await api?.stop()
  await database?.close()
  await idp?.stop()
  await conformant?.stop()
})

interface Outcome {
  jar: CookieJarBrowser
  visits: Visit[]
  last: Visit
  /** The refusal said on the sign-in page. */
  error: string | undefined
  /** The session cookie's value the browser holds, if any. */
  session: string | undefined
}

const alertOf = (page: string) =>
  /<p class="error" role="alert">([^<]*)<\/p>/
    .exec(page)?.[1]
    ?.replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&')

function outcome(jar: CookieJarBrowser, visits: Visit[]): Outcome {
  const last = visits.at(-1)!
  return { jar, visits, last, error: alertOf(last.text), session: jar.get(`${site.url}/account/keys`, 'wt_session') }
}

const startUrl = (provider: string, next?: string) => `${site.url}/account/sso/${provider}${next === undefined ? '' : `?next=${encodeURIComponent(next)}`}`
const isCallback = (url: string) => new URL(url).origin === site.url && /^\/account\/sso\/[^/]+\/callback$/.test(new URL(url).pathname)

/** Signs in through `provider` as the provider's account `account` (its id, or DENY), in a new browser unless one is given. */
async function sso(provider: string, account: string, options: { next?: string; jar?: CookieJarBrowser } = {}): Promise<Outcome> {
  const jar = options.jar ?? new CookieJarBrowser()
  jar.set(idp.issuer, 'login_as', account)
  return outcome(jar, await jar.browse(startUrl(provider, options.next)))
}

/** Runs the flow up to the provider's redirect back, without following it: the callback URL and the browser. */
async function upToCallback(provider: string, account: string, jar = new CookieJarBrowser()): Promise<{ jar: CookieJarBrowser; callback: string; visits: Visit[] }> {
  jar.set(idp.issuer, 'login_as', account)
  const visits = await jar.browse(startUrl(provider), { stopBefore: isCallback })
  const location = visits.at(-1)!.headers.get('location')
  expect(location && isCallback(new URL(location, visits.at(-1)!.url).toString())).toBeTruthy()
  return { jar, callback: new URL(location!, visits.at(-1)!.url).toString(), visits }
}

const sessionCount = async (userId: string) => (await sql<{ n: number }>('select count(*)::int as n from sessions where user_id = $1', [userId]))[0]!.n
const usersWithEmail = async (email: string) => sql<{ id: string; organization_id: string; username: string; display_name: string; role: string; status: string }>(
  'select u.id, u.organization_id, u.username, u.display_name, u.role, u.status from users u join user_emails e on e.user_id = u.id where e.email = $1',
  [email.toLowerCase()],
)
/** The provider's account for `user`'s e-mail address, verified unless said otherwise. */
const accountFor = (user: Pick<TestUser, 'email'>, claims: AccountClaims = {}) => idp.account({ email: user.email, email_verified: true, name: 'Someone', ...claims })

/** The keys page with the browser's cookies: who it shows signed in, or null when it sends to the sign-in page. */
async function signedInAs(jar: CookieJarBrowser): Promise<string | null> {
  const page = await jar.request(`${site.url}/account/keys`)
  if (page.status !== 200) return null
  return /<form method="post" action="\/account\/sign-out" class="sign-out">\s*<span>([^<]*)<\/span>/.exec(page.text)?.[1] ?? null
}

const setCookie = (visit: Visit, name: string) => visit.headers.getSetCookie().find((line) => line.startsWith(`${name}=`))
const attributes = (line: string | undefined) =>
  (line ?? '')
    .split(';')
    .slice(1)
    .map((part) => part.trim())
    .sort()

describe('the sign-in page', () => {
  test('offers "Sign in with <name>" per provider, carrying a same-site next', async () => {
    const page = await new CookieJarBrowser().request(`${site.url}/account/sign-in`)
    expect(page.status).toBe(200)
    expect(page.text).toContain('<a class="button" href="/account/sso/acme">Sign in with Acme ID</a>')
    expect(page.text).toContain('<a class="button" href="/account/sso/auto">Sign in with Auto ID</a>')
    const withNext = await new CookieJarBrowser().request(`${site.url}/account/sign-in?next=${encodeURIComponent('/pages/ops?kiosk=1')}`)
    expect(withNext.text).toContain(`<a class="button" href="/account/sso/acme?next=${encodeURIComponent('/pages/ops?kiosk=1')}">Sign in with Acme ID</a>`)
    const foreign = await new CookieJarBrowser().request(`${site.url}/account/sign-in?next=${encodeURIComponent('https://evil.example/')}`)
    expect(foreign.text).toContain('<a class="button" href="/account/sso/acme">Sign in with Acme ID</a>')
  })
})

describe('signing in', () => {
  test('an active user matched by verified e-mail: the authorization request, the cookies, a working web session, audited', async () => {
    const user = await api.createUser(org.acme, 'member')
    const account = accountFor(user, { name: 'Acme Person' })
    const { jar, visits, last, session, error } = await sso('acme', account)
    expect(error).toBeUndefined()

    // The authorization request: code flow with PKCE S256, state and nonce, to the app's callback.
    const start = visits[0]!
    expect(start.status).toBe(302)
    expect(start.headers.get('cache-control')).toBe('no-store')
    const authorize = new URL(start.headers.get('location')!)
    expect(authorize.origin + authorize.pathname).toBe(`${idp.issuer}/auth`)
    expect(Object.fromEntries(authorize.searchParams)).toEqual({
      client_id: 'worktrack-acme',
      redirect_uri: `${site.url}/account/sso/acme/callback`,
      response_type: 'code',
      scope: 'openid email profile',
      state: expect.stringMatching(/^[\w-]{20,}$/),
      nonce: expect.stringMatching(/^[\w-]{20,}$/),
      code_challenge: expect.stringMatching(/^[\w-]{43}$/),
      code_challenge_method: 'S256',
    })
    // The flow's cookie: HttpOnly, SameSite=Lax (the provider's redirect back is cross-site), the SSO paths only, 10 minutes.
    expect(attributes(setCookie(start, 'wt_sso'))).toEqual(['HttpOnly', 'Max-Age=600', 'Path=/account/sso', 'SameSite=Lax'])
    // It holds the flow: this request's state and nonce, and the verifier whose S256 is the challenge.
    const flow = JSON.parse(Buffer.from(setCookie(start, 'wt_sso')!.split(';')[0]!.slice('wt_sso='.length), 'base64url').toString('utf8'))
    expect(flow).toEqual({ provider: 'acme', state: authorize.searchParams.get('state'), nonce: authorize.searchParams.get('nonce'), verifier: expect.any(String) })
    expect(createHash('sha256').update(flow.verifier).digest('base64url')).toBe(authorize.searchParams.get('code_challenge')!)
    // The provider signed in the account the browser chose.
    expect(idp.signedIn.at(-1)).toBe(account)

    // The callback: a page that moves on by itself, the session cookie set, the flow's cookie cleared.
    expect(isCallback(last.url)).toBe(true)
    expect(last.status).toBe(200)
    expect(last.headers.get('content-type')).toContain('text/html')
    expect(last.text).toContain('<meta http-equiv="refresh" content="0;url=/account/keys" />')
    expect(attributes(setCookie(last, 'wt_session'))).toEqual(expect.arrayContaining(['HttpOnly', 'Path=/', 'SameSite=Strict']))
    expect(attributes(setCookie(last, 'wt_sso'))).toEqual(expect.arrayContaining(['Max-Age=0', 'Path=/account/sso']))
    expect(jar.get(`${site.url}/account/sso/acme/callback`, 'wt_sso')).toBeUndefined()
    expect(session).toMatch(/^wts_/)

    expect(await signedInAs(jar)).toEndWith(`(${user.email})`)
    const rows = await sql<{ kind: string; organization_id: string }>('select kind, organization_id from sessions where user_id = $1', [user.id])
    expect(rows).toEqual([{ kind: 'web', organization_id: org.acme }])
    const audited = await sql<{ action: string; via: string; organization_id: string }>(
      "select action, via, organization_id from audit_logs where actor_user_id = $1 and resource_type = 'session'",
      [user.id],
    )
    expect(audited).toEqual([{ action: 'session.created', via: 'account', organization_id: org.acme }])
  })

  test('the e-mail claim is matched whatever its case', async () => {
    const user = await api.createUser(org.acme, 'member')
    const { session, error } = await sso('acme', accountFor(user, { email: user.email.toUpperCase() }))
    expect(error).toBeUndefined()
    expect(session).toBeDefined()
    expect(await sessionCount(user.id)).toBe(1)
  })

  test('next: a same-site path is where the page goes on; another site is ignored', async () => {
    const user = await api.createUser(org.acme, 'member')
    const account = accountFor(user)
    const same = await sso('acme', account, { next: '/pages/ops?kiosk=1' })
    expect(same.last.status).toBe(200)
    expect(same.last.text).toContain('<meta http-equiv="refresh" content="0;url=/pages/ops?kiosk=1" />')
    for (const foreign of ['https://evil.example/x', '//evil.example/x', '/\\evil.example', '/.//evil.example']) {
      const elsewhere = await sso('acme', account, { next: foreign })
      expect(elsewhere.last.status).toBe(200)
      expect(elsewhere.last.text).toContain('<meta http-equiv="refresh" content="0;url=/account/keys" />')
      expect(elsewhere.last.text).not.toContain('evil.example')
    }
  })

  test('the same person signing in again gets another session of the same user', async () => {
    const user = await api.createUser(org.acme, 'member')
    const account = accountFor(user)
    expect((await sso('acme', account)).session).toBeDefined()
    expect((await sso('acme', account)).session).toBeDefined()
    expect(await sessionCount(user.id)).toBe(2)
  })
})

describe('refusals: the sign-in page with the reason, no session', () => {
  async function refused(provider: string, account: string, userId: string | null, status: number, message: string | RegExp) {
    const result = await sso(provider, account)
    expect(isCallback(result.last.url)).toBe(true)
    expect({ status: result.last.status, error: result.error }).toEqual({ status, error: typeof message === 'string' ? message : expect.stringMatching(message) })
    expect(result.last.text).toContain('<form method="post" action="/account/sign-in"')
    expect(setCookie(result.last, 'wt_session')).toBeUndefined()
    expect(attributes(setCookie(result.last, 'wt_sso'))).toEqual(expect.arrayContaining(['Max-Age=0', 'Path=/account/sso']))
    expect(result.session).toBeUndefined()
    expect(await signedInAs(result.jar)).toBeNull()
    if (userId) expect(await sessionCount(userId)).toBe(0)
    return result
  }

  test('an e-mail address the provider does not say is verified (false, or not said)', async () => {
    const user = await api.createUser(org.acme, 'member')
    await refused('acme', accountFor(user, { email_verified: false }), user.id, 403, 'The identity provider does not say this e-mail address is verified.')
    await refused('acme', idp.account({ email: user.email, name: 'No verification said' }), user.id, 403, 'The identity provider does not say this e-mail address is verified.')
  })

  test('no e-mail address at all', async () => {
    await refused('acme', idp.account({ name: 'Nameless' }), null, 403, 'The identity provider gave no e-mail address.')
  })

  test('an unknown user when the provider creates none', async () => {
    await refused('acme', idp.account({ email: 'nobody-here@example.com', email_verified: true }), null, 403, 'No account for nobody-here@example.com here; ask an administrator to invite you.')
    expect(await usersWithEmail('nobody-here@example.com')).toEqual([])
  })

  test('a deactivated user', async () => {
    const user = await api.createUser(org.acme, 'member')
    await api.deactivateUser(user.id)
    await refused('acme', accountFor(user), user.id, 403, `No active account for ${user.email}; ask an administrator.`)
  })

  test('an invited user who has not accepted yet', async () => {
    const admin = await api.createUser(org.acme, 'administrator')
    const { secret } = await api.createKey(admin.id, ['users:write'])
    const invited = await api.request('POST', '/api/v1/users', { key: secret, body: { email: 'invitee-sso@example.com' } })
    expect(invited.status).toBe(201)
    await refused('acme', idp.account({ email: 'invitee-sso@example.com', email_verified: true }), invited.body.data.id, 403, 'Your invitation is not accepted yet: open its link first.')
    expect((await usersWithEmail('invitee-sso@example.com')).map((user) => user.status)).toEqual(['invited'])
  })

  test("a user of another organization (e-mail addresses are unique across them): refused, nothing created, even where the provider creates users", async () => {
    const stranger = await api.createUser(org.other, 'member')
    const account = accountFor(stranger)
    await refused('acme', account, stranger.id, 403, `No account for ${stranger.email} here; ask an administrator to invite you.`)
    await refused('auto', account, stranger.id, 403, `No account for ${stranger.email} here; ask an administrator to invite you.`)
    expect((await usersWithEmail(stranger.email)).map((user) => user.organization_id)).toEqual([org.other])
  })

  test('the provider said no (error=access_denied)', async () => {
    await refused('acme', DENY, null, 403, 'Acme ID did not sign you in (access_denied).')
  })

  test("an error the callback's query names is said as text, never markup", async () => {
    const user = await api.createUser(org.acme, 'member')
    const { jar, callback } = await upToCallback('acme', accountFor(user))
    const url = new URL(callback)
    url.search = new URLSearchParams({ error: '<img src=x onerror=alert(1)>', state: url.searchParams.get('state')! }).toString()
    const answer = await jar.request(url.toString())
    expect(answer.status).toBe(403)
    expect(answer.text).not.toContain('<img src=x')
    expect(alertOf(answer.text)).toBe('Acme ID did not sign you in (&lt;img src=x onerror=alert(1)&gt;).')
    expect(await sessionCount(user.id)).toBe(0)
  })
})

describe('allowed domains', () => {
  test('only addresses of the allowed domains (case-insensitive), not their subdomains', async () => {
    const inside = await api.createUser(org.acme, 'member', { email: `inside-${Date.now()}@example.com` })
    const signedIn = await sso('acme-domains', accountFor(inside))
    expect(signedIn.error).toBeUndefined()
    expect(signedIn.session).toBeDefined()
    for (const email of [`outside-${Date.now()}@other.test`, `sub-${Date.now()}@mail.example.com`]) {
      const outside = await api.createUser(org.acme, 'member', { email })
      const result = await sso('acme-domains', accountFor(outside))
      expect({ status: result.last.status, error: result.error, session: result.session }).toEqual({
        status: 403,
        error: `Addresses of ${email.slice(email.indexOf('@') + 1)} may not sign in with Acme Domains.`,
        session: undefined,
      })
      expect(await sessionCount(outside.id)).toBe(0)
      // The same user through a provider without the restriction is fine.
      expect((await sso('acme', accountFor(outside))).session).toBeDefined()
    }
  })
})

describe('users created on first sign-in (createUsers)', () => {
  test('with defaultRole administrator: the user, their role, username and display name; signed in; a second sign-in is the same user', async () => {
    const stamp = Date.now()
    const email = `New.Person+sso-${stamp}@auto.example`
    const account = idp.account({ email, email_verified: true, name: '  New Person  ' })
    const first = await sso('auto', account)
    expect(first.error).toBeUndefined()
    expect(first.last.status).toBe(200)
    const [created, ...more] = await usersWithEmail(email)
    expect(more).toEqual([])
    expect(created).toMatchObject({ organization_id: org.auto, username: `new.personsso-${stamp}`, display_name: 'New Person', role: 'administrator', status: 'active' })
    expect(await signedInAs(first.jar)).toBe(`New Person (${email.toLowerCase()})`)
    const audited = await sql<{ action: string; via: string }>("select action, via from audit_logs where resource_id = $1 and action = 'user.created'", [created!.id])
    expect(audited).toEqual([{ action: 'user.created', via: 'account' }])

    const second = await sso('auto', account)
    expect(second.session).toBeDefined()
    expect((await usersWithEmail(email)).map((user) => user.id)).toEqual([created!.id])
    expect(await sessionCount(created!.id)).toBe(2)
  })

  test('the role defaults to member; a username already taken gets a suffix; no name claim: the username', async () => {
    const taken = await api.createUser(org.auto, 'member', { username: `taken${Date.now()}` })
    const email = `${taken.username}@auto.example`
    const first = await sso('auto-member', idp.account({ email, email_verified: true }))
    expect(first.error).toBeUndefined()
    const [created] = await usersWithEmail(email)
    expect(created!.role).toBe('member')
    expect(created!.username).toMatch(new RegExp(`^${taken.username}-[0-9a-f]{5}$`))
    expect(created!.display_name).toBe(taken.username)
  })

  test("the same new person's first sign-in twice at once: one user, both signed in", async () => {
    const email = `twice-${Date.now()}@auto.example`
    const account = idp.account({ email, email_verified: true, name: 'Twice' })
    const [one, two] = await Promise.all([sso('auto', account), sso('auto', account)])
    expect([one.error, two.error]).toEqual([undefined, undefined])
    expect([one.session, two.session].every(Boolean)).toBe(true)
    const created = await usersWithEmail(email)
    expect(created).toHaveLength(1)
    expect(await sessionCount(created[0]!.id)).toBe(2)
  })

  test('an unverified address creates nobody', async () => {
    const email = `unverified-${Date.now()}@auto.example`
    const result = await sso('auto', idp.account({ email, email_verified: false }))
    expect(result.last.status).toBe(403)
    expect(result.session).toBeUndefined()
    expect(await usersWithEmail(email)).toEqual([])
  })
})

describe('password sign-in turned off for the organization', () => {
  test('the password form refuses (403) while single sign-on signs the same user in', async () => {
    const user = await api.createUser(org.strict, 'member')
    const outcome = await runCommand(registry, ['org', 'update', '--id', org.strict, '--password-sign-in', 'false'], async () => ({ service: api.service, close: async () => {} }))
    expect(outcome.code).toBe(0)
    const jar = new CookieJarBrowser()
    const form = await jar.request(`${site.url}/account/sign-in`)
    const csrf = /name="csrf" value="([^"]+)"/.exec(form.text)![1]!
    const posted = await jar.request(`${site.url}/account/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf, email: user.email, password: user.password }).toString(),
    })
    expect(posted.status).toBe(403)
    expect(alertOf(posted.text)).toBe('Password sign-in is turned off for your organization: sign in through its identity provider.')
    expect(posted.text).toContain('Sign in with Strict ID')
    expect(jar.get(`${site.url}/account/keys`, 'wt_session')).toBeUndefined()
    expect(await sessionCount(user.id)).toBe(0)

    const signedIn = await sso('strict', accountFor(user), { jar })
    expect(signedIn.error).toBeUndefined()
    expect(signedIn.session).toBeDefined()
    expect(await signedInAs(jar)).toContain(user.email)
    expect(await sessionCount(user.id)).toBe(1)
  })
})

describe('the callback checks the flow', () => {
  test('no flow cookie (another browser, or expired): 400, no session', async () => {
    const user = await api.createUser(org.acme, 'member')
    const { callback } = await upToCallback('acme', accountFor(user))
    const elsewhere = new CookieJarBrowser()
    const answer = await elsewhere.request(callback)
    expect({ status: answer.status, error: alertOf(answer.text) }).toEqual({ status: 400, error: 'This sign-in expired or began in another browser; start again.' })
    expect(setCookie(answer, 'wt_session')).toBeUndefined()
    expect(await sessionCount(user.id)).toBe(0)
  })

  test('a malformed flow cookie is no flow: 400', async () => {
    const user = await api.createUser(org.acme, 'member')
    const { jar, callback } = await upToCallback('acme', accountFor(user))
    for (const value of ['garbage', Buffer.from('{"provider":"acme"}').toString('base64url'), Buffer.from('[1,2]').toString('base64url')]) {
      jar.set(site.url, 'wt_sso', value, '/account/sso')
      const answer = await jar.request(callback)
      expect(answer.status).toBe(400)
      expect(setCookie(answer, 'wt_session')).toBeUndefined()
    }
    expect(await sessionCount(user.id)).toBe(0)
  })

  test("a flow begun for another provider: 400", async () => {
    const user = await api.createUser(org.acme, 'member')
    const { jar, callback } = await upToCallback('acme', accountFor(user))
    const url = new URL(callback)
    url.pathname = '/account/sso/acme-domains/callback'
    const answer = await jar.request(url.toString())
    expect({ status: answer.status, error: alertOf(answer.text) }).toEqual({ status: 400, error: 'This sign-in expired or began in another browser; start again.' })
    expect(await sessionCount(user.id)).toBe(0)
  })

  test('a state that is not the flow\'s: 403, and the code is not spent on it', async () => {
    const user = await api.createUser(org.acme, 'member')
    const { jar, callback } = await upToCallback('acme', accountFor(user))
    const flowCookie = jar.get(callback, 'wt_sso')!
    const url = new URL(callback)
    url.searchParams.set('state', 'not-the-state-of-this-flow')
    const answer = await jar.request(url.toString())
    expect({ status: answer.status, error: alertOf(answer.text) }).toEqual({ status: 403, error: 'The answer of Acme ID could not be verified; start again.' })
    expect(setCookie(answer, 'wt_session')).toBeUndefined()
    expect(await sessionCount(user.id)).toBe(0)
    // Refused before the code was exchanged: with its own state (and the flow cookie the refusal cleared), it still works.
    jar.set(site.url, 'wt_sso', flowCookie, '/account/sso')
    expect((await jar.request(callback)).status).toBe(200)
    expect(await sessionCount(user.id)).toBe(1)
  })

  test('a code that is not the one the provider gave: 403', async () => {
    const user = await api.createUser(org.acme, 'member')
    const { jar, callback } = await upToCallback('acme', accountFor(user))
    const url = new URL(callback)
    url.searchParams.set('code', `${url.searchParams.get('code')}x`)
    const answer = await jar.request(url.toString())
    expect({ status: answer.status, error: alertOf(answer.text) }).toEqual({ status: 403, error: 'The answer of Acme ID could not be verified; start again.' })
    expect(await sessionCount(user.id)).toBe(0)
  })

  test('the PKCE verifier must be the flow\'s: another flow\'s cookie with this state is refused by the provider (403)', async () => {
    const user = await api.createUser(org.acme, 'member')
    const account = accountFor(user)
    const { jar, callback } = await upToCallback('acme', account)
    const flow = JSON.parse(Buffer.from(jar.get(callback, 'wt_sso')!, 'base64url').toString('utf8'))
    // The same state and nonce, but a verifier of the attacker's choosing.
    jar.set(site.url, 'wt_sso', Buffer.from(JSON.stringify({ ...flow, verifier: 'a'.repeat(43) })).toString('base64url'), '/account/sso')
    const answer = await jar.request(callback)
    expect({ status: answer.status, error: alertOf(answer.text) }).toEqual({ status: 403, error: 'The answer of Acme ID could not be verified; start again.' })
    expect(await sessionCount(user.id)).toBe(0)
  })

  test('a replayed callback (the same code again) is refused, with or without the flow cookie', async () => {
    const user = await api.createUser(org.acme, 'member')
    const { jar, callback } = await upToCallback('acme', accountFor(user))
    const flowCookie = jar.get(callback, 'wt_sso')!
    const first = await jar.request(callback)
    expect(first.status).toBe(200)
    expect(await sessionCount(user.id)).toBe(1)
    // The same browser: its flow cookie is gone.
    const sameBrowser = await jar.request(callback)
    expect(sameBrowser.status).toBe(400)
    // Whoever kept the flow cookie too: the provider refuses the spent code.
    const thief = new CookieJarBrowser()
    thief.set(site.url, 'wt_sso', flowCookie, '/account/sso')
    const replayed = await thief.request(callback)
    expect({ status: replayed.status, error: alertOf(replayed.text) }).toEqual({ status: 403, error: 'The answer of Acme ID could not be verified; start again.' })
    expect(setCookie(replayed, 'wt_session')).toBeUndefined()
    expect(await sessionCount(user.id)).toBe(1)
  })

  test('a flow cookie whose next is not a string is not a server error', async () => {
    const user = await api.createUser(org.acme, 'member')
    const { jar, callback } = await upToCallback('acme', accountFor(user))
    const flow = JSON.parse(Buffer.from(jar.get(callback, 'wt_sso')!, 'base64url').toString('utf8'))
    jar.set(site.url, 'wt_sso', Buffer.from(JSON.stringify({ ...flow, next: 42 })).toString('base64url'), '/account/sso')
    const answer = await jar.request(callback)
    expect(answer.status).toBeLessThan(500)
    if (answer.status === 200) expect(answer.text).toContain('content="0;url=/account/keys"')
    else expect(await sessionCount(user.id)).toBe(0)
  })
})

describe('the ID token is verified', () => {
  /** Runs a flow whose token endpoint answer is rewritten by `forge`; the callback's answer. */
  async function withForgedToken(user: TestUser, forge: (idToken: string) => string) {
    idp.onTokenResponse = (body) => ({ ...body, id_token: forge(body.id_token!) })
    try {
      return await sso('acme', accountFor(user))
    } finally {
      idp.onTokenResponse = undefined
    }
  }
  const claimsChanged = (change: (claims: Record<string, any>) => Record<string, any>) => (idToken: string) => idp.sign(change(idp.decode(idToken)))

  test('the provider\'s own token, untouched, passes through the rewriting (the check of the checks)', async () => {
    const user = await api.createUser(org.acme, 'member')
    const result = await withForgedToken(user, (idToken) => idToken)
    expect(result.session).toBeDefined()
    const resigned = await withForgedToken(user, claimsChanged((claims) => claims))
    expect(resigned.session).toBeDefined()
  })

  const cases: Array<[string, (idToken: string) => string]> = [
    ['a nonce that is not the flow\'s', claimsChanged((claims) => ({ ...claims, nonce: 'another-nonce' }))],
    ['another audience', claimsChanged((claims) => ({ ...claims, aud: 'another-client' }))],
    ['another issuer', claimsChanged((claims) => ({ ...claims, iss: 'http://127.0.0.1:1' }))],
    ['expired', claimsChanged((claims) => ({ ...claims, iat: claims.iat - 7200, exp: Math.floor(Date.now() / 1000) - 3600 }))],
    ['no nonce', claimsChanged(({ nonce: _nonce, ...claims }) => claims)],
  ]
  for (const [name, forge] of cases)
    test(`${name}: 403, no session`, async () => {
      const user = await api.createUser(org.acme, 'member')
      const result = await withForgedToken(user, forge)
      expect({ status: result.last.status, error: result.error }).toEqual({ status: 403, error: 'The answer of Acme ID could not be verified; start again.' })
      expect(result.session).toBeUndefined()
      expect(await sessionCount(user.id)).toBe(0)
    })

  test("a token whose claims were changed after signing (someone else's e-mail): its signature is checked, 403", async () => {
    const user = await api.createUser(org.acme, 'member')
    const victim = await api.createUser(org.acme, 'administrator')
    const result = await withForgedToken(user, (idToken) => {
      const [header, , signature] = idToken.split('.')
      const claims = { ...idp.decode(idToken), email: victim.email }
      return `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`
    })
    expect({ status: result.last.status, error: result.error, victimSessions: await sessionCount(victim.id) }).toEqual({
      status: 403,
      error: 'The answer of Acme ID could not be verified; start again.',
      victimSessions: 0,
    })
    expect(result.session).toBeUndefined()
  })
})

describe('providers that are not there', () => {
  test('an unknown provider id: 404 on the sign-in page, not a server error, at both doors', async () => {
    const start = await new CookieJarBrowser().request(`${site.url}/account/sso/nope`)
    expect({ status: start.status, error: alertOf(start.text) }).toEqual({ status: 404, error: 'There is no such sign-in provider.' })
    const callback = await new CookieJarBrowser().request(`${site.url}/account/sso/nope/callback?code=x&state=y`)
    expect({ status: callback.status, error: alertOf(callback.text) }).toEqual({ status: 404, error: 'There is no such sign-in provider.' })
    const odd = await new CookieJarBrowser().request(`${site.url}/account/sso/${encodeURIComponent('../../api')}/callback`)
    expect(odd.status).toBeLessThan(500)
  })

  test('a provider that cannot be reached: 503 on the sign-in page, no redirect', async () => {
    const answer = await new CookieJarBrowser().request(`${site.url}/account/sso/offline`)
    expect({ status: answer.status, error: alertOf(answer.text) }).toEqual({ status: 503, error: 'Offline ID cannot be reached right now; try again later.' })
    expect(answer.headers.get('location')).toBeNull()
    expect(setCookie(answer, 'wt_sso')).not.toContain('Max-Age=600')
  })
})

describe('a provider that puts the e-mail claims only at userinfo (OpenID Connect Core 5.4)', () => {
  test('its users sign in too', async () => {
    const user = await api.createUser(org.acme, 'member')
    const jar = new CookieJarBrowser()
    jar.set(conformant.issuer, 'login_as', conformant.account({ email: user.email, email_verified: true, name: 'Conformant Person' }))
    const result = outcome(jar, await jar.browse(startUrl('conformant')))
    expect(result.error).toBeUndefined()
    expect(result.session).toBeDefined()
    expect(await sessionCount(user.id)).toBe(1)
  })
})
