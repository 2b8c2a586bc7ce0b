/**
 * OAuth clients: dynamic registration (RFC 7591; public clients only) with its bounds, and the
 * client ID metadata documents a client may name itself by (an https URL as `client_id`, whose
 * JSON gives `client_name` and `redirect_uris`), read through the public-address guard.
 */
import { randomUUID } from 'node:crypto'
import https from 'node:https'
import { isIP } from 'node:net'
import { LRUCache } from 'lru-cache'
import { queryText, type Database } from '../../../src/db'
import { hostOf, isPublicAddress, pinnedLookup } from '../../../src/net/targets'
import { hashSecret } from '../../../src/secrets'
import { OAuthError, type OAuthSettings } from './model'

export interface OAuthClient {
  id: string
  kind: 'registered' | 'document'
  name: string
  redirectUris: string[]
}

const MAX_REDIRECT_URIS = 10
const URI_MAX = 2000
const NAME_MAX = 200
const DEFAULT_NAME = 'Unnamed app'
/** A registered client never approved for this long goes first when registrations are full. */
const UNUSED_DAYS = 30
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '::1', 'localhost'])

const invalidMetadata = (description: string) => new OAuthError(400, 'invalid_client_metadata', description)
const invalidRedirect = (description: string) => new OAuthError(400, 'invalid_redirect_uri', description)

/** A redirect URI as §16 allows it: https, or http on a loopback host; absolute, no fragment, no credentials. */
export function checkRedirectUri(value: unknown): string {
  if (typeof value !== 'string' || !value || value.length > URI_MAX) throw invalidRedirect(`A redirect URI is a string of 1..${URI_MAX} characters.`)
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw invalidRedirect(`"${value.slice(0, 100)}" is not an absolute URL.`)
  }
  if (url.hash || value.includes('#')) throw invalidRedirect('A redirect URI has no fragment.')
  if (url.username || url.password) throw invalidRedirect('A redirect URI carries no credentials.')
  if (url.protocol === 'https:') return value
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(hostOf(url))) return value
  throw invalidRedirect('A redirect URI is https, or http on a loopback host (127.0.0.1, [::1], localhost).')
}

function stringArray(value: unknown, field: string): string[] | undefined {
  if (value === undefined) return undefined
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) throw invalidMetadata(`${field} is an array of strings.`)
  return value
}

/** The accepted part of a registration request; anything else it says is ignored, as RFC 7591 allows. */
export function registrationInput(body: unknown): { name: string; redirectUris: string[] } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidMetadata('The body is a JSON object of client metadata.')
  const metadata = body as Record<string, unknown>
  const uris = stringArray(metadata.redirect_uris, 'redirect_uris')
  if (!uris?.length) throw invalidRedirect('redirect_uris names at least one redirect URI.')
  if (uris.length > MAX_REDIRECT_URIS) throw invalidRedirect(`At most ${MAX_REDIRECT_URIS} redirect URIs.`)
  const method = metadata.token_endpoint_auth_method
  if (method !== undefined && method !== 'none')
    throw invalidMetadata('Only public clients register here: token_endpoint_auth_method is "none" (no client secret; PKCE protects the code).')
  const grants = stringArray(metadata.grant_types, 'grant_types')
  if (grants?.some((grant) => grant !== 'authorization_code' && grant !== 'refresh_token')) throw invalidMetadata('grant_types may hold authorization_code and refresh_token.')
  const responses = stringArray(metadata.response_types, 'response_types')
  if (responses?.some((type) => type !== 'code')) throw invalidMetadata('response_types may hold code.')
  const name = metadata.client_name
  if (name !== undefined && (typeof name !== 'string' || name.trim().length > NAME_MAX)) throw invalidMetadata(`client_name is a string of at most ${NAME_MAX} characters.`)
  return { name: (typeof name === 'string' && name.trim()) || DEFAULT_NAME, redirectUris: [...new Set(uris.map(checkRedirectUri))] }
}

/** What a registration answers (RFC 7591 §3.2.1). */
export const registrationAnswer = (client: OAuthClient, issuedAt: Date) => ({
  client_id: client.id,
  client_id_issued_at: Math.floor(issuedAt.getTime() / 1000),
  client_name: client.name,
  redirect_uris: client.redirectUris,
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
})

/**
 * Registers a public client from `address`: at most `registrationsPerHour` per address (429 with
 * Retry-After past it) and `maxClients` in all, where clients never approved for 30 days make room
 * first (then 503). One transaction under an advisory lock, so concurrent registrations count each other.
 */
export async function registerClient(db: Database, settings: OAuthSettings, address: string, input: { name: string; redirectUris: string[] }): Promise<{ client: OAuthClient; createdAt: Date }> {
  const registeredBy = hashSecret(`oauth-registration:${address}`)
  return db.transaction(async (tx) => {
    await queryText(tx, `select pg_advisory_xact_lock(hashtext('oauth_clients registration'))`, [])
    const [recent] = await queryText<{ count: number; oldest: string | null }>(
      tx,
      `select count(*)::int as count, min(created_at)::text as oldest from oauth_clients where registered_by = $1 and created_at > now() - interval '1 hour'`,
      [registeredBy],
    )
    if (recent!.count >= settings.registrationsPerHour) {
      const retry = Math.max(1, Math.ceil((new Date(recent!.oldest!).getTime() + 3_600_000 - Date.now()) / 1000))
      throw new OAuthError(429, 'too_many_registrations', `At most ${settings.registrationsPerHour} registrations an hour from one address; retry in ${retry} s.`, { 'retry-after': String(retry) })
    }
    const [total] = await queryText<{ count: number }>(tx, `select count(*)::int as count from oauth_clients where kind = 'registered'`, [])
    if (total!.count >= settings.maxClients) {
      await queryText(
        tx,
        `delete from oauth_clients where id in (
           select id from oauth_clients where kind = 'registered' and last_approved_at is null and created_at < now() - make_interval(days => $1)
           order by created_at limit $2)`,
        [UNUSED_DAYS, total!.count - settings.maxClients + 1],
      )
      const [left] = await queryText<{ count: number }>(tx, `select count(*)::int as count from oauth_clients where kind = 'registered'`, [])
      if (left!.count >= settings.maxClients)
        throw new OAuthError(503, 'temporarily_unavailable', 'This server holds as many registered clients as it may (auth.oauth.maxClients); retry later.', { 'retry-after': '3600' })
    }
    const id = randomUUID()
    const [row] = await queryText<{ createdAt: Date }>(
      tx,
      `insert into oauth_clients (id, kind, name, redirect_uris, registered_by) values ($1, 'registered', $2, $3::text[], $4) returning created_at as "createdAt"`,
      [id, input.name, input.redirectUris, registeredBy],
    )
    return { client: { id, kind: 'registered' as const, name: input.name, redirectUris: input.redirectUris }, createdAt: new Date(row!.createdAt) }
  })
}

/** Whether a `client_id` is a client ID metadata document's URL (https with a path). */
export const isDocumentId = (clientId: string) => clientId.startsWith('https://')

export interface DocumentFetcher {
  (url: string): Promise<unknown>
}

/**
 * Reads a client ID metadata document: GET over https, through the public-address guard (every
 * address of its host public, pinned for the connection), no redirects, at most `maxBytes` within
 * `timeoutMs`, JSON.
 */
export function documentFetcher(settings: OAuthSettings, agent: { ca?: string | Buffer | Array<string | Buffer> } | undefined): DocumentFetcher {
  return (value) =>
    new Promise((resolve, reject) => {
      const url = new URL(value)
      const host = hostOf(url)
      if (isIP(host) && !settings.allowPrivateDocuments && !isPublicAddress(host)) return reject(new Error(`${host} is not a public address`))
      let timer: ReturnType<typeof setTimeout> | undefined
      const request = https.get(url, { lookup: pinnedLookup(settings.allowPrivateDocuments, 'auth.oauth.allowPrivateDocuments') as never, headers: { accept: 'application/json' }, ...(agent?.ca ? { ca: agent.ca } : {}) }, (response) => {
        if (response.statusCode !== 200) {
          response.destroy()
          return reject(new Error(`it answered ${response.statusCode}`))
        }
        const chunks: Buffer[] = []
        let size = 0
        response.on('data', (chunk: Buffer) => {
          size += chunk.length
          if (size > settings.documentMaxBytes) {
            response.destroy()
            reject(new Error(`it is larger than ${settings.documentMaxBytes} bytes`))
          } else chunks.push(chunk)
        })
        response.on('end', () => {
          clearTimeout(timer)
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')))
          } catch {
            reject(new Error('it is not JSON'))
          }
        })
        response.on('error', reject)
      })
      timer = setTimeout(() => {
        request.destroy()
        reject(new Error(`no answer within ${settings.documentTimeoutMs} ms`))
      }, settings.documentTimeoutMs)
      request.on('error', (error) => {
        clearTimeout(timer)
        reject(error)
      })
    })
}

/** Client ID metadata documents read at once, at most; past it a new document is not read (the request fails as an unknown client). */
const MAX_DOCUMENT_READS = 16
/** Documents each instance remembers, read or refused (a refusal for a minute). */
const DOCUMENT_CACHE_ENTRIES = 1000
const REFUSAL_CACHE_MS = 60_000

/**
 * Client ID metadata documents as this instance knows them: read once per
 * `documentCacheSeconds` (concurrent requests share a read), at most MAX_DOCUMENT_READS at a time,
 * remembered in memory only. Nothing is written for a document until a user approves its client,
 * so a flood of authorization requests naming new URLs costs bounded memory and reads, no rows.
 */
export class ClientDocuments {
  private readonly known: LRUCache<string, OAuthClient | false>
  private readonly reading = new Map<string, Promise<OAuthClient | undefined>>()

  constructor(
    private readonly settings: OAuthSettings,
    private readonly fetchDocument: DocumentFetcher,
  ) {
    this.known = new LRUCache({ max: DOCUMENT_CACHE_ENTRIES, ttl: Math.max(1, settings.documentCacheSeconds * 1000) })
  }

  async find(clientId: string): Promise<OAuthClient | undefined> {
    const known = this.known.get(clientId)
    if (known !== undefined) return known || undefined
    const inFlight = this.reading.get(clientId)
    if (inFlight) return inFlight
    if (this.reading.size >= MAX_DOCUMENT_READS) return undefined
    const read = this.read(clientId).finally(() => this.reading.delete(clientId))
    this.reading.set(clientId, read)
    return read
  }

  private async read(clientId: string): Promise<OAuthClient | undefined> {
    const client = await this.readDocument(clientId)
    this.known.set(clientId, client ?? false, client ? {} : { ttl: Math.min(REFUSAL_CACHE_MS, Math.max(1, this.settings.documentCacheSeconds * 1000)) })
    return client
  }

  /** The document's client when it is one: https, a path, JSON naming itself, valid metadata. */
  private async readDocument(clientId: string): Promise<OAuthClient | undefined> {
    let document: unknown
    try {
      const url = new URL(clientId)
      if (url.hash || url.username || url.password || url.pathname === '/') return undefined
      document = await this.fetchDocument(clientId)
    } catch {
      return undefined
    }
    const metadata = document as Record<string, unknown>
    if (typeof metadata !== 'object' || metadata === null || metadata.client_id !== clientId) return undefined
    try {
      const input = registrationInput({ ...metadata, token_endpoint_auth_method: metadata.token_endpoint_auth_method ?? 'none' })
      return { id: clientId, kind: 'document', ...input }
    } catch {
      return undefined
    }
  }
}

/** The client of a `client_id`: a registered one, or a metadata document's; undefined when there is no such client. */
export async function findClient(db: Database, documents: ClientDocuments, clientId: string): Promise<OAuthClient | undefined> {
  if (!clientId || clientId.length > URI_MAX) return undefined
  if (isDocumentId(clientId)) return documents.find(clientId)
  const [row] = await queryText<OAuthClient>(db, `select id, kind, name, redirect_uris as "redirectUris" from oauth_clients where id = $1 and kind = 'registered'`, [clientId])
  return row ? { id: row.id, kind: row.kind, name: row.name, redirectUris: row.redirectUris } : undefined
}

/**
 * Marks a client approved (it is then not dropped to make room). A document's client is written
 * now, its first approval: the table holds the documents users approved, as it holds registrations.
 */
export async function clientApproved(db: Database, client: OAuthClient): Promise<void> {
  const now = new Date().toISOString()
  if (client.kind === 'registered') return void (await queryText(db, `update oauth_clients set last_approved_at = $2::timestamptz where id = $1`, [client.id, now]))
  await queryText(
    db,
    `insert into oauth_clients (id, kind, name, redirect_uris, fetched_at, last_approved_at) values ($1, 'document', $2, $3::text[], $4::timestamptz, $4::timestamptz)
     on conflict (id) do update set name = excluded.name, redirect_uris = excluded.redirect_uris, fetched_at = excluded.fetched_at, last_approved_at = excluded.last_approved_at`,
    [client.id, client.name, client.redirectUris, now],
  )
}
