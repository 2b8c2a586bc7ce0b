/**
 * Idempotency-Key on POST: the first request with a key reserves it; a retry with the same key
 * and body replays the stored response; a different body is 422; a retry while the first is
 * still running is 409. Records live 24 hours per API key.
 */
import { createHash } from 'node:crypto'
import { and, eq, lt, sql } from 'drizzle-orm'
import type { Database } from '../db'
import { idempotencyKeys } from '../schema'
import { badRequest, conflict, idempotencyMismatch } from './errors'

export const IDEMPOTENCY_HEADER = 'idempotency-key'
const KEEP = sql`interval '24 hours'`
const ABANDONED = sql`interval '60 seconds'`

export interface Reservation {
  apiKeyId: string
  key: string
  stored: boolean
}

export type IdempotencyOutcome = { reserved: Reservation } | { replay: { status: number; response: unknown } }

/** Reserves `key` for this request, or returns the response to replay; throws 422/409/400. */
export async function reserveIdempotencyKey(db: Database, apiKeyId: string, key: string, method: string, path: string, body: unknown): Promise<IdempotencyOutcome> {
  if (key.length < 1 || key.length > 255 || !/^[\x21-\x7e]+$/.test(key))
    throw badRequest('Idempotency-Key must be 1..255 visible ASCII characters.', 'Idempotency-Key')
  const requestHash = createHash('sha256').update(`${method} ${path}\n${JSON.stringify(body ?? null)}`).digest('hex')
  // A record older than 24 hours, or a reservation abandoned by a crashed request, frees the key.
  const [reserved] = await db
    .insert(idempotencyKeys)
    .values({ apiKeyId, key, requestHash })
    .onConflictDoUpdate({
      target: [idempotencyKeys.apiKeyId, idempotencyKeys.key],
      set: { requestHash, status: null, response: null, createdAt: sql`now()` },
      setWhere: sql`${idempotencyKeys.createdAt} < now() - ${KEEP} or (${idempotencyKeys.status} is null and ${idempotencyKeys.createdAt} < now() - ${ABANDONED})`,
    })
    .returning({ key: idempotencyKeys.key })
  if (reserved) return { reserved: { apiKeyId, key, stored: false } }
  const [existing] = await db
    .select()
    .from(idempotencyKeys)
    .where(and(eq(idempotencyKeys.apiKeyId, apiKeyId), eq(idempotencyKeys.key, key)))
  if (!existing) return reserveIdempotencyKey(db, apiKeyId, key, method, path, body)
  if (existing.requestHash !== requestHash) throw idempotencyMismatch()
  if (existing.status === null) throw conflict('A request with this Idempotency-Key is still being processed; retry shortly.')
  return { replay: { status: existing.status, response: existing.response } }
}

/** Stores the successful response of a reserved request. */
export async function storeIdempotentResponse(db: Database, reservation: Reservation, status: number, response: unknown): Promise<void> {
  reservation.stored = true
  await db
    .update(idempotencyKeys)
    .set({ status, response: response ?? null })
    .where(and(eq(idempotencyKeys.apiKeyId, reservation.apiKeyId), eq(idempotencyKeys.key, reservation.key)))
}

/** Frees the key of a request that failed, so a retry runs again. */
export async function releaseIdempotencyKey(db: Database, reservation: Reservation): Promise<void> {
  if (reservation.stored) return
  await db
    .delete(idempotencyKeys)
    .where(and(eq(idempotencyKeys.apiKeyId, reservation.apiKeyId), eq(idempotencyKeys.key, reservation.key)))
}

/** Deletes records older than 24 hours. */
export async function purgeIdempotencyKeys(db: Database): Promise<void> {
  await db.delete(idempotencyKeys).where(lt(idempotencyKeys.createdAt, sql`now() - ${KEEP}`))
}
