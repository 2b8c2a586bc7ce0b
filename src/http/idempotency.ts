/**
 * Idempotency-Key on POST (API v1). The record of a request is written in the transaction of the
 * change it answers (the unit of work, src/writes.ts, claims the key there and stores the answer
 * before the commit), so a committed POST always replays its first answer (status, Location and
 * body, secrets shown once included), even when that answer never reached the client, and a POST
 * that rolled back leaves its key free. The same key with another body is 422. A retry while the
 * first is still running waits for it (the key's row is locked until that transaction ends), then
 * replays its answer. Records live 24 hours per API key.
 *
 * Answers are stored sealed: AES-256-GCM under a key derived (HKDF-SHA-256) from the caller's
 * credential and the Idempotency-Key. Only the credential's hash and the key are stored, so the
 * database alone cannot open a recorded answer (a share link's token, a webhook's secret): only
 * the holder of the credential that made the request can have it replayed.
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto'
import { queryText, type Executor } from '../db'
import { Answer } from './answer'
import { badRequest, idempotencyMismatch } from './errors'

export const IDEMPOTENCY_HEADER = 'idempotency-key'

/**
 * One idempotent POST: what identifies it, and whether its answer was claimed yet. Made by the v1
 * kit, handed by the route to the service's write, which hands it to its unit of work.
 */
export interface IdempotentRequest {
  readonly apiKeyId: string
  /** The key's organization (the records' distribution column). */
  readonly organizationId: string
  readonly key: string
  readonly requestHash: string
  /** The request's path: a replayed 201 names the same Location. */
  readonly path: string
  /** What seals the answer (never stored). */
  readonly sealingKey: Buffer
  /** Set by the first unit of work of the request: later ones are ordinary transactions. */
  claimed: boolean
}

/** Validates the header and describes the request; throws 400 for a malformed key. */
export function idempotentRequest(caller: { apiKeyId: string; organizationId: string }, credential: string, key: string, path: string, body: unknown): IdempotentRequest {
  if (key.length < 1 || key.length > 255 || !/^[\x21-\x7e]+$/.test(key)) throw badRequest('Idempotency-Key must be 1..255 visible ASCII characters.', 'Idempotency-Key')
  const requestHash = createHash('sha256').update(`POST ${path}\n${JSON.stringify(body ?? null)}`).digest('hex')
  const sealingKey = Buffer.from(hkdfSync('sha256', credential, caller.apiKeyId, `idempotency-key\0${key}`, 32))
  return { apiKeyId: caller.apiKeyId, organizationId: caller.organizationId, key, requestHash, path, sealingKey, claimed: false }
}

/** The recorded answer as stored: `{sealed}`, base64url of iv (12) ‖ tag (16) ‖ ciphertext. */
interface SealedAnswer {
  sealed: string
}

function seal(request: IdempotentRequest, answer: Answer): SealedAnswer {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', request.sealingKey, iv)
  const plain = JSON.stringify({ status: answer.status, location: answer.location ?? null, value: answer.value ?? null })
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
  return { sealed: Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url') }
}

function unseal(request: IdempotentRequest, stored: SealedAnswer): Answer {
  const bytes = Buffer.from(stored.sealed, 'base64url')
  const decipher = createDecipheriv('aes-256-gcm', request.sealingKey, bytes.subarray(0, 12))
  decipher.setAuthTag(bytes.subarray(12, 28))
  const plain = Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8')
  const { status, location, value } = JSON.parse(plain) as { status: number; location: string | null; value: unknown }
  return new Answer(value, status, location ?? undefined)
}

/**
 * The committed answer of an earlier request with the same key: replayed, or 422 for another body;
 * null when there is none.
 */
export async function storedAnswer(executor: Executor, request: IdempotentRequest): Promise<Answer | null> {
  const [row] = await queryText<{ requestHash: string; response: SealedAnswer }>(
    executor,
    `select request_hash as "requestHash", response from idempotency_keys
      where api_key_id = $1 and key = $2 and organization_id = $3 and status is not null and created_at > now() - interval '24 hours'`,
    [request.apiKeyId, request.key, request.organizationId],
  )
  if (!row) return null
  if (row.requestHash !== request.requestHash) throw idempotencyMismatch()
  // The same key and body under the same API key: the credential is that key's, so it opens.
  return unseal(request, row.response)
}

/**
 * Claims the key inside the change's transaction: false when another request's record is
 * committed (the caller replays it). A record older than 24 hours, or one without an answer
 * (left by a version that reserved keys outside the transaction), is taken over.
 */
export async function claimIdempotencyKey(tx: Executor, request: IdempotentRequest): Promise<boolean> {
  // The time is given, not read with now(): Citus refuses a function that is not IMMUTABLE in an ON CONFLICT clause.
  const now = Date.now()
  const rows = await queryText(
    tx,
    `insert into idempotency_keys (api_key_id, key, organization_id, request_hash) values ($1, $2, $4, $3)
      on conflict (api_key_id, key, organization_id) do update set request_hash = excluded.request_hash, status = null, response = null, created_at = $5::timestamptz
        where idempotency_keys.created_at <= $6::timestamptz or idempotency_keys.status is null
      returning 1`,
    [request.apiKeyId, request.key, request.requestHash, request.organizationId, new Date(now).toISOString(), new Date(now - 24 * 3_600_000).toISOString()],
  )
  return rows.length > 0
}

/** Stores the answer, sealed, in the claiming transaction, just before it commits. */
export async function recordAnswer(tx: Executor, request: IdempotentRequest, answer: Answer): Promise<void> {
  await queryText(tx, 'update idempotency_keys set status = $3, response = $4::jsonb where api_key_id = $1 and key = $2 and organization_id = $5', [
    request.apiKeyId,
    request.key,
    answer.status,
    JSON.stringify(seal(request, answer)),
    request.organizationId,
  ])
}

/** Deletes records older than 24 hours. */
export async function purgeIdempotencyKeys(executor: Executor): Promise<void> {
  await queryText(executor, `delete from idempotency_keys where created_at <= now() - interval '24 hours'`, [])
}
