/**
 * Database errors that mean "a Citus worker is away" answer 503 with Retry-After, as the raw
 * errors reach the mapper (the coordinator's error as the cause of the failed query); an
 * internal error stays a 500. What the coordinator raises was read on a real cluster
 * (tests/scale/citus-rebalance.test.ts stops a worker under load).
 */
import { describe, expect, test } from 'bun:test'
import { mapError } from '../../src/http/error-mapper'

/** A failed query as the driver and Drizzle throw it: the PostgreSQL error is the cause. */
const failedQuery = (sql: string, code: string, message: string) => new Error(`Failed query: ${sql}`, { cause: Object.assign(new Error(message), { code, severity: 'ERROR' }) })

describe('a Citus worker away', () => {
  test('a statement needing the stopped worker (08006, connection to the remote node failed) is 503 with Retry-After', () => {
    const error = failedQuery(
      'select … from work_items where organization_id = $1',
      '08006',
      'connection to the remote node postgres@127.0.0.1:43205 failed with the following error: Connection refused\n\tIs the server running on that host and accepting TCP/IP connections?',
    )
    expect(mapError(error)).toMatchObject({ status: 503, headers: { 'retry-after': '1' }, items: [{ code: 'UNAVAILABLE' }] })
  })

  test("a COMMIT whose worker went away after the transaction's statements (XX000, could not commit transaction for shard) is 503 with Retry-After", () => {
    const error = failedQuery('commit', 'XX000', 'could not commit transaction for shard 102008 on at least one active node')
    expect(mapError(error)).toMatchObject({ status: 503, headers: { 'retry-after': '1' }, items: [{ code: 'UNAVAILABLE' }] })
  })

  test('any other internal error stays a 500', () => {
    expect(mapError(failedQuery('select 1', 'XX000', 'cache lookup failed for relation 16384')).status).toBe(500)
    expect(mapError(failedQuery('commit', 'XX000', 'could not commit transaction for shard 102008 on at least one active node, and more')).status).toBe(500)
    expect(mapError(failedQuery('commit', 'XX001', 'could not commit transaction for shard 102008 on at least one active node')).status).toBe(500)
  })
})
