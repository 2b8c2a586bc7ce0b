/**
 * Idempotency-Key on POST (API v1). The record of a request is written in the transaction of the
 * change it answers (`mutate` in src/audit.ts claims the key there and stores the answer before
 * the commit), so a committed POST always replays its first answer, even when that answer never
 * reached the client, and a POST that rolled back leaves its key free. The same key with another
 * body is 422. A retry while the first is still running waits for it (the key's row is locked
 * until that transaction ends), then replays its answer. Records live 24 hours per API key.
 */
import { createHash } from 'node:crypto'
import { queryText, type Executor } from '../db'
import { badRequest, idempotencyMismatch } from './errors'

export const IDEMPOTENCY_HEADER = 'idempotency-key'

/** An idempotent POST in progress, carried by its actor from the v1 kit to `mutate`. */
export interface IdempotentRequest {
  apiKeyId: string
  /** The key's organization (the records' distribution column). */
  organizationId: string
  key: string
  requestHash: string
  /** The status the request answers with on success (read when the answer is recorded). */
  status(): number
  /** Set by the first `mutate` of the request: later ones are ordinary transactions. */
  claimed?: boolean
  /** Set when the answer is a replay of the one a concurrent request committed first. */
  replayed?: { status: number }
}

export interface StoredAnswer {
  status: number
  response: unknown
}

/** Validates the header and describes the request; throws 400 for a malformed key. */
export function idempotentRequest(apiKey: { apiKeyId: string; organizationId: string }, key: string, path: string, body: unknown, status: () => number): IdempotentRequest {
  if (key.length < 1 || key.length > 255 || !/^[\x21-\x7e]+$/.test(key)) throw badRequest('Idempotency-Key must be 1..255 visible ASCII characters.', 'Idempotency-Key')
  const requestHash = createHash('sha256').update(`POST ${path}\n${JSON.stringify(body ?? null)}`).digest('hex')
  return { apiKeyId: apiKey.apiKeyId, organizationId: apiKey.organizationId, key, requestHash, status }
}

/** The committed answer of an earlier request with the same key: replayed, or 422 for another body; null when there is none. */
export async function storedAnswer(executor: Executor, request: IdempotentRequest): Promise<StoredAnswer | null> {
  const [row] = await queryText<{ requestHash: string; status: number; response: unknown }>(
    executor,
    `select request_hash as "requestHash", status, response from idempotency_keys
      where api_key_id = $1 and key = $2 and organization_id = $3 and status is not null and created_at > now() - interval '24 hours'`,
    [request.apiKeyId, request.key, request.organizationId],
  )
  if (!row) return null
  if (row.requestHash !== request.requestHash) throw idempotencyMismatch()
  return { status: row.status, response: row.response }
}

/**
 * Claims the key inside the change's transaction: false when another request's record is
 * committed (the caller replays it). A record older than 24 hours, or one without an answer
 * (left by a version that reserved keys outside the transaction), is taken over.
 */
export async function claimIdempotencyKey(tx: Executor, request: IdempotentRequest): Promise<boolean> {
  const rows = await queryText(
    tx,
    `insert into idempotency_keys (api_key_id, key, organization_id, request_hash) values ($1, $2, $4, $3)
      on conflict (api_key_id, key, organization_id) do update set request_hash = excluded.request_hash, status = null, response = null, created_at = now()
        where idempotency_keys.created_at <= now() - interval '24 hours' or idempotency_keys.status is null
      returning 1`,
    [request.apiKeyId, request.key, request.requestHash, request.organizationId],
  )
  return rows.length > 0
}

/** Stores the answer in the claiming transaction, just before it commits. */
export async function recordAnswer(tx: Executor, request: IdempotentRequest, response: unknown): Promise<void> {
  await queryText(tx, 'update idempotency_keys set status = $3, response = $4::jsonb where api_key_id = $1 and key = $2 and organization_id = $5', [
    request.apiKeyId,
    request.key,
    request.status(),
    JSON.stringify(response ?? null),
    request.organizationId,
  ])
}

/** Deletes records older than 24 hours. */
export async function purgeIdempotencyKeys(executor: Executor): Promise<void> {
  await queryText(executor, `delete from idempotency_keys where created_at <= now() - interval '24 hours'`, [])
}
