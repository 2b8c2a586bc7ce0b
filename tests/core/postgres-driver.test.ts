/**
 * The PostgreSQL driver answers every query with its own rows, also after a query on the same
 * connection failed halfway through its rows. Unpatched, postgres.js 3.4.x leaves its row counter
 * standing then, so the next query's rows arrive after holes and `const [row] = …` reads
 * undefined: under a database restart an access check would answer 404 for a project that
 * exists. scripts/patch-postgres.mjs (postinstall) fixes it; this proves it on a real server.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { openDatabase, queryText, type DatabaseHandle } from '../../src/db'
import { usingServer } from '../helpers/database'

// A row that fails after three good ones: the error arrives after rows were already streamed.
const FAILS_ON_ROW_FOUR = 'select i, 1 / (4 - i) as boom from generate_series(1, 10) i'

describe.skipIf(!usingServer())('the PostgreSQL driver after a query failed mid-stream (needs a PostgreSQL server: TEST_DATABASE_URL; PGlite has no such driver)', () => {
  let database: DatabaseHandle
  beforeAll(async () => {
    // One connection: every query below shares it.
    database = await openDatabase(process.env.TEST_DATABASE_URL, { maxConnections: 1 })
  })
  afterAll(() => database.close())

  test('the next query on the connection gets exactly its rows, pipelined or not', async () => {
    const failing = queryText(database.db, FAILS_ON_ROW_FOUR, []).then(
      () => 'no error',
      (error: Error) => error.message,
    )
    const pipelined = queryText<{ x: number }>(database.db, 'select x from generate_series(1, 5) x', [])
    expect(await failing).toContain('division by zero')
    const rows = await pipelined
    expect(rows).toHaveLength(5)
    expect(rows[0]).toEqual({ x: 1 })

    await queryText(database.db, FAILS_ON_ROW_FOUR, []).catch(() => {})
    const [first] = await queryText<{ id: number }>(database.db, 'select 7 as id', [])
    expect(first).toEqual({ id: 7 })
  })

  test('the installed postgres.js carries the fix (the bare client, as every import of it gets)', async () => {
    const client = postgres(process.env.TEST_DATABASE_URL!, { max: 1, onnotice: () => {} })
    try {
      await client.unsafe(FAILS_ON_ROW_FOUR).catch(() => {})
      const rows = await client.unsafe('select x from generate_series(1, 2) x')
      expect(rows.map((row) => row.x)).toEqual([1, 2])
    } finally {
      await client.end()
    }
  })
})
