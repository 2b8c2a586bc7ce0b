/**
 * A real OpenID Connect provider for single sign-on tests: panva's `oidc-provider` (v9) on a free
 * port of 127.0.0.1 (issuer `http://127.0.0.1:<port>`), with accounts the test controls, its own
 * signing key, PKCE required for every client, and interactions that finish by themselves (the
 * account a browser signs in as is named by its `login_as` cookie on the provider's host, else
 * `loginAs`), so a test without Chromium can run the whole flow with `CookieJarBrowser`.
 *
 *   const idp = await startOidcProvider()
 *   api = await startTestService({ config: { auth: { oidc: { providers: [{ id: 'acme', issuer: idp.issuer, … }] } } } })
 *   site = listen(api, 'localhost')
 *   await idp.addClient({ clientId, clientSecret, redirectUris: [`${site.url}/account/sso/acme/callback`] })
 *
 * Clients are added after the app listens (their redirect URIs name its port): the provider
 * reads unknown clients from its storage, where `addClient` puts them.
 */
import crypto, { createSign, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'

/** What an account tells about itself (the ID token's and userinfo's claims, besides `sub`). */
export interface AccountClaims {
  email?: string
  email_verified?: boolean
  name?: string
}

/** A `login_as` value that makes the provider refuse (the user said no): `error=access_denied`. */
export const DENY = '-deny-'

/** The token endpoint's JSON answer. */
export interface TokenResponse {
  access_token?: string
  id_token?: string
  token_type?: string
  expires_in?: number
  scope?: string
  [name: string]: unknown
}

export interface ClientRegistration {
  clientId: string
  clientSecret: string
  redirectUris: string[]
}

export interface StartOptions {
  /**
   * The ID token carries only `sub` when an access token is issued too; the rest is at userinfo
   * (OpenID Connect Core 5.4, and oidc-provider's default). Default here: false — the claims of
   * the requested scopes are in the ID token as well, as most providers put them.
   */
  conformIdTokenClaims?: boolean
}

export interface TestOidcProvider {
  issuer: string
  port: number
  /** Accounts by id (their `sub`). */
  accounts: Map<string, AccountClaims>
  /** The account the interactions sign in when the browser names none (`login_as` cookie). */
  loginAs: string | undefined
  /** Every finished interaction's account, in order (who the provider signed in). */
  signedIn: string[]
  /** An account with these claims under a fresh id; the id. */
  account(claims: AccountClaims): string
  addClient(client: ClientRegistration): Promise<void>
  /** When set, rewrites the token endpoint's successful JSON answer (forged or altered ID tokens). */
  onTokenResponse: ((body: TokenResponse) => TokenResponse) | undefined
  /** A JWT signed with the provider's own key (as valid as its own ID tokens, whatever the claims). */
  sign(claims: Record<string, unknown>): string
  /** A JWT's claims (not verified). */
  decode(jwt: string): Record<string, any>
  stop(): Promise<void>
}

// ---------------------------------------------------------------------------------------------
// The parts of oidc-provider's API used here (the package ships no type declarations).

interface InteractionDetails {
  uid: string
  prompt: { name: 'login' | 'consent' | string; details: { missingOIDCScope?: string[]; missingOIDCClaims?: string[]; missingResourceScopes?: Record<string, string[]> } }
  params: Record<string, unknown> & { client_id: string }
  session?: { accountId?: string }
  grantId?: string
}
interface GrantInstance {
  addOIDCScope(scope: string): void
  addOIDCClaims(claims: string[]): void
  addResourceScope(indicator: string, scope: string): void
  save(): Promise<string>
}
interface ProviderInstance {
  issuer: string
  proxy: boolean
  callback(): (req: IncomingMessage, res: ServerResponse) => void
  interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>
  interactionFinished(req: IncomingMessage, res: ServerResponse, result: Record<string, unknown>, options?: { mergeWithLastSubmission?: boolean }): Promise<void>
  Grant: { new (properties: { accountId: string; clientId: string }): GrantInstance; find(id: string): Promise<GrantInstance | undefined> }
  on(event: string, listener: (...args: any[]) => void): void
}
type ProviderClass = new (issuer: string, configuration: Record<string, unknown>) => ProviderInstance

/** oidc-provider's notices ("Unsupported runtime" under Bun, development-only features) are not the test's. */
async function quietly<T>(work: () => Promise<T> | T): Promise<T> {
  const { warn, info } = console
  const filter =
    (original: (...args: unknown[]) => void) =>
    (...args: unknown[]) =>
      typeof args[0] === 'string' && args[0].includes('oidc-provider') ? undefined : original.apply(console, args)
  console.warn = filter(warn)
  console.info = filter(info)
  try {
    return await work()
  } finally {
    console.warn = warn
    console.info = info
  }
}

/**
 * Its cookie signatures (koa → cookies → keygrip → tsscmp) call `crypto.pseudoRandomBytes`, whose
 * deprecation notice (DEP0115, said once a process) is spent here, unseen, rather than in a test.
 */
function spendDeprecationNotice() {
  const emitWarning = process.emitWarning
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    if (String(warning).includes('pseudoRandomBytes') || rest.includes('DEP0115')) return
    return (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest)
  }) as typeof process.emitWarning
  try {
    ;(crypto as unknown as { pseudoRandomBytes?: (size: number) => Buffer }).pseudoRandomBytes?.(1)
  } finally {
    process.emitWarning = emitWarning
  }
}

let providerClass: Promise<ProviderClass> | undefined
/** Imported once, by a specifier TypeScript does not resolve (no declarations to find). */
function loadProvider(): Promise<ProviderClass> {
  const specifier: string = 'oidc-provider'
  return (providerClass ??= quietly(async () => {
    spendDeprecationNotice()
    return ((await import(specifier)) as { default: ProviderClass }).default
  }))
}

/** oidc-provider's storage for one provider (its own memory adapter is shared and says so loudly). */
function memoryAdapter() {
  const store = new Map<string, { payload: Record<string, any>; expiresAt: number }>()
  const live = (key: string) => {
    const entry = store.get(key)
    if (entry && entry.expiresAt <= Date.now()) {
      store.delete(key)
      return undefined
    }
    return entry?.payload
  }
  class Adapter {
    constructor(readonly model: string) {}
    key = (id: string) => `${this.model}:${id}`
    async upsert(id: string, payload: Record<string, any>, expiresIn?: number) {
      store.set(this.key(id), { payload, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : Infinity })
    }
    async find(id: string) {
      return live(this.key(id))
    }
    async findByUid(uid: string) {
      for (const [key] of store) if (key.startsWith(`${this.model}:`) && live(key)?.uid === uid) return live(key)
      return undefined
    }
    async findByUserCode(userCode: string) {
      for (const [key] of store) if (key.startsWith(`${this.model}:`) && live(key)?.userCode === userCode) return live(key)
      return undefined
    }
    async consume(id: string) {
      const payload = live(this.key(id))
      if (payload) payload.consumed = Math.floor(Date.now() / 1000)
    }
    async destroy(id: string) {
      store.delete(this.key(id))
    }
    async revokeByGrantId(grantId: string) {
      for (const [key, entry] of store) if (entry.payload.grantId === grantId) store.delete(key)
    }
  }
  return { Adapter, store }
}

const b64url = (value: Buffer | string) => Buffer.from(value).toString('base64url')

function cookieOf(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=')
    if (key === name) return decodeURIComponent(value.join('='))
  }
  return undefined
}

/** Starts the provider on a free port of 127.0.0.1; `stop()` it in afterAll. */
export async function startOidcProvider(options: StartOptions = {}): Promise<TestOidcProvider> {
  const Provider = await loadProvider()
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const kid = randomUUID()
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid, use: 'sig', alg: 'RS256' }
  const { Adapter, store } = memoryAdapter()
  const accounts = new Map<string, AccountClaims>()

  // The server first: its port makes the issuer; requests go to the provider once it exists.
  let handle: ((req: IncomingMessage, res: ServerResponse) => void) | undefined
  const server = createServer((req, res) => {
    if (handle) handle(req, res)
    else res.writeHead(503).end()
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const port = (server.address() as { port: number }).port
  const issuer = `http://127.0.0.1:${port}`

  const provider = await quietly(
    () =>
      new Provider(issuer, {
        adapter: Adapter,
        jwks: { keys: [jwk] },
        cookies: { keys: [randomBytes(32).toString('base64url')] },
        clients: [],
        clientDefaults: { grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_post', id_token_signed_response_alg: 'RS256' },
        // Every client proves its code with PKCE (S256 is the only method oidc-provider accepts).
        pkce: { required: () => true },
        responseTypes: ['code'],
        scopes: ['openid', 'email', 'profile'],
        claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
        conformIdTokenClaims: options.conformIdTokenClaims ?? false,
        features: { devInteractions: { enabled: false } },
        interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
        async findAccount(_ctx: unknown, id: string) {
          const claims = accounts.get(id)
          if (!claims) return undefined
          return { accountId: id, claims: async () => ({ sub: id, ...accounts.get(id) }) }
        },
        renderError(ctx: { type: string; body: string }, out: Record<string, string>) {
          ctx.type = 'text/plain'
          ctx.body = `${out.error}: ${out.error_description ?? ''}`
        },
        ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Session: 600, Grant: 600, RefreshToken: 600 },
      }),
  )

  const idp: TestOidcProvider = {
    issuer,
    port,
    accounts,
    loginAs: undefined,
    signedIn: [],
    onTokenResponse: undefined,
    account(claims) {
      const id = `acct-${randomBytes(6).toString('hex')}`
      accounts.set(id, claims)
      return id
    },
    async addClient({ clientId, clientSecret, redirectUris }) {
      // Where the provider reads clients it was not configured with (dynamic registration's storage).
      await new Adapter('Client').upsert(clientId, {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      })
    },
    sign(claims) {
      const input = `${b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid }))}.${b64url(JSON.stringify(claims))}`
      return `${input}.${createSign('RSA-SHA256').update(input).sign(privateKey).toString('base64url')}`
    },
    decode(jwt) {
      return JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8'))
    },
    async stop() {
      handle = undefined
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      store.clear()
    },
  }

  /** Login with the browser's chosen account, then consent to what the client asked: no pages. */
  async function interact(req: IncomingMessage, res: ServerResponse) {
    const details = await provider.interactionDetails(req, res)
    const chosen = cookieOf(req, 'login_as') ?? idp.loginAs
    if (details.prompt.name === 'login') {
      if (chosen === DENY || !chosen || !accounts.has(chosen)) {
        const description = chosen === DENY ? 'The user refused.' : `No such test account: ${chosen ?? '(none chosen)'}.`
        return provider.interactionFinished(req, res, { error: 'access_denied', error_description: description }, { mergeWithLastSubmission: false })
      }
      idp.signedIn.push(chosen)
      return provider.interactionFinished(req, res, { login: { accountId: chosen } }, { mergeWithLastSubmission: false })
    }
    if (details.prompt.name === 'consent') {
      const accountId = details.session!.accountId!
      const grant = details.grantId ? (await provider.Grant.find(details.grantId))! : new provider.Grant({ accountId, clientId: details.params.client_id })
      grant.addOIDCScope('openid email profile')
      if (details.prompt.details.missingOIDCClaims) grant.addOIDCClaims(details.prompt.details.missingOIDCClaims)
      for (const [indicator, scopes] of Object.entries(details.prompt.details.missingResourceScopes ?? {})) grant.addResourceScope(indicator, scopes.join(' '))
      const grantId = await grant.save()
      return provider.interactionFinished(req, res, { consent: details.grantId ? {} : { grantId } }, { mergeWithLastSubmission: true })
    }
    res.writeHead(400, { 'content-type': 'text/plain' }).end(`unexpected prompt ${details.prompt.name}`)
  }

  /** The token endpoint's answer, rewritten by `onTokenResponse` (buffered, then sent with its new length). */
  function rewriting(res: ServerResponse, rewrite: (body: TokenResponse) => TokenResponse): ServerResponse {
    const chunks: Buffer[] = []
    const end = res.end.bind(res)
    res.write = ((chunk: any) => {
      if (chunk) chunks.push(Buffer.from(chunk))
      return true
    }) as ServerResponse['write']
    res.end = ((chunk?: any) => {
      if (chunk && typeof chunk !== 'function') chunks.push(Buffer.from(chunk))
      let body = Buffer.concat(chunks).toString('utf8')
      if (res.statusCode === 200) body = JSON.stringify(rewrite(JSON.parse(body) as TokenResponse))
      if (!res.headersSent) res.setHeader('content-length', Buffer.byteLength(body))
      return end(body)
    }) as ServerResponse['end']
    return res
  }

  const callback = provider.callback()
  handle = (req, res) => {
    const path = new URL(req.url ?? '/', issuer).pathname
    if (req.method === 'GET' && path.startsWith('/interaction/')) {
      interact(req, res).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(400, { 'content-type': 'text/plain' })
        res.end(`interaction failed: ${error instanceof Error ? error.message : String(error)}`)
      })
      return
    }
    const rewrite = idp.onTokenResponse
    callback(req, req.method === 'POST' && path === '/token' && rewrite ? rewriting(res, rewrite) : res)
  }
  return idp
}

// ---------------------------------------------------------------------------------------------
// A cookie-keeping HTTP client that follows redirects across origins, as a browser would.

interface StoredCookie {
  value: string
  path: string
}

export interface Visit {
  url: string
  status: number
  headers: Headers
  text: string
}

/**
 * Cookies per host (not port, as browsers keep them), with their paths; `fetch` with
 * `redirect: 'manual'`, following `Location` itself. No SameSite, no scripts, no meta refresh:
 * the Chromium test checks what only a browser does.
 */
export class CookieJarBrowser {
  /** host → name → path → cookie */
  readonly jar = new Map<string, Map<string, Map<string, StoredCookie>>>()
  /** The `Set-Cookie` lines of every answer, in order, with the URL that sent them. */
  readonly setCookies: Array<{ url: string; line: string }> = []

  /** Sets a cookie as if `origin` had (Path=/). */
  set(origin: string, name: string, value: string, path = '/'): void {
    this.store(new URL(origin).hostname, name, { value, path })
  }

  /** The value of `name` for `url` (the most specific path first), if any. */
  get(url: string, name: string): string | undefined {
    return this.matching(new URL(url)).find(([each]) => each === name)?.[1]
  }

  /** Every cookie name the jar holds for `origin`'s host. */
  names(origin: string): string[] {
    return [...(this.jar.get(new URL(origin).hostname)?.keys() ?? [])]
  }

  /** One request; its cookies kept. */
  async request(url: string, init: { method?: string; body?: string; headers?: Record<string, string> } = {}): Promise<Visit> {
    const target = new URL(url)
    const cookie = this.matching(target)
      .map(([name, value]) => `${name}=${value}`)
      .join('; ')
    const response = await fetch(target, { method: init.method ?? 'GET', body: init.body, headers: { ...init.headers, ...(cookie ? { cookie } : {}) }, redirect: 'manual' })
    for (const line of response.headers.getSetCookie()) {
      this.setCookies.push({ url, line })
      this.receive(target, line)
    }
    return { url, status: response.status, headers: response.headers, text: await response.text() }
  }

  /**
   * Requests `url` and follows redirects (as GET), up to `maxHops`; every step, the last one last.
   * With `stopBefore`, a redirect to a URL it accepts is not followed (the last step is that redirect).
   */
  async browse(url: string, options: { maxHops?: number; stopBefore?: (url: string) => boolean } = {}): Promise<Visit[]> {
    const maxHops = options.maxHops ?? 20
    const visits: Visit[] = []
    let next: string | undefined = url
    while (next) {
      if (visits.length > maxHops) throw new Error(`more than ${maxHops} redirects: ${visits.map((visit) => visit.url).join(' → ')}`)
      const visit: Visit = await this.request(next)
      visits.push(visit)
      const location = visit.headers.get('location')
      next = visit.status >= 300 && visit.status < 400 && location ? new URL(location, visit.url).toString() : undefined
      if (next && options.stopBefore?.(next)) break
    }
    return visits
  }

  private store(host: string, name: string, cookie: StoredCookie) {
    let byName = this.jar.get(host)
    if (!byName) this.jar.set(host, (byName = new Map()))
    let byPath = byName.get(name)
    if (!byPath) byName.set(name, (byPath = new Map()))
    byPath.set(cookie.path, cookie)
  }

  private receive(url: URL, line: string) {
    const [pair, ...attributes] = line.split(';').map((part) => part.trim())
    const at = pair!.indexOf('=')
    const name = pair!.slice(0, at)
    const value = pair!.slice(at + 1)
    let path = url.pathname.replace(/\/[^/]*$/, '') || '/'
    let expired = false
    for (const attribute of attributes) {
      const [key, ...rest] = attribute.split('=')
      const setting = rest.join('=')
      switch (key!.toLowerCase()) {
        case 'path':
          path = setting || '/'
          break
        case 'max-age':
          if (Number(setting) <= 0) expired = true
          break
        case 'expires':
          if (Date.parse(setting) <= Date.now()) expired = true
          break
      }
    }
    if (expired) this.jar.get(url.hostname)?.get(name)?.delete(path)
    else this.store(url.hostname, name, { value, path })
  }

  /** [name, value] of the cookies sent to `url`: its host's, whose path is a prefix of the URL's path, longest first. */
  private matching(url: URL): Array<[string, string]> {
    const found: Array<[string, string, number]> = []
    for (const [name, byPath] of this.jar.get(url.hostname) ?? []) {
      for (const { value, path } of byPath.values()) {
        const within = url.pathname === path || url.pathname.startsWith(path.endsWith('/') ? path : `${path}/`)
        if (within) found.push([name, value, path.length])
      }
    }
    return found.sort((a, b) => b[2] - a[2]).map(([name, value]) => [name, value])
  }
}
