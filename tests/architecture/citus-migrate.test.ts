/**
 * Migrations place the schema on Citus as the manifests declare (docs/scaling.md):
 * on a fresh database of a real cluster, every table ends up distributed by organization_id
 * (co-located), reference or local as its plugin declares, with every foreign key back; migrating
 * again does nothing; a later migration's new table and new column apply to the distributed
 * schema. On plain PostgreSQL and PGlite the step does nothing.
 *
 * The cluster part runs when TEST_CITUS_URL names a database on a Citus coordinator whose
 * metadata lists the workers (`citus_get_active_worker_nodes()`), e.g. one made by
 * `cluster.sh createdb`; it creates its own database on the coordinator and every worker, the way
 * a deployment does (the extension in each, the workers added), and drops them afterwards.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomBytes, randomUUID } from 'node:crypto'
import type { MigrationMeta } from 'drizzle-orm/migrator'
import { registry } from '../../plugins'
import { declaredPlacements, hasCitus, readPlacement, type TableKind, type TablePlacements } from '../../src/citus'
import { openDatabase, queryText, type DatabaseHandle, type Executor } from '../../src/db'
import { applyMigrations, readMigrations } from '../../src/migrate'
import { createApiKey } from '../../plugins/auth/service'
import { createLogger } from '../../src/log'
import { createTestDatabase, pgliteTemplate, type TestDatabase } from '../helpers/database'
import { startTestService } from '../helpers/service'
import { createClusterDatabase, type ClusterDatabase } from '../helpers/citus-cluster'
import { readSchema } from './citus'

const placements = declaredPlacements(registry)
const declaredKind = (table: string): TableKind => placements[table] ?? 'distributed'
const CITUS_URL = process.env.TEST_CITUS_URL

/** Every foreign key of the public schema as `table.name definition`. */
async function foreignKeys(executor: Executor): Promise<string[]> {
  const rows = await queryText<{ key: string }>(
    executor,
    `select c.relname || '.' || k.conname || ' ' || pg_get_constraintdef(k.oid) as key
       from pg_constraint k join pg_class c on c.oid = k.conrelid join pg_namespace n on n.oid = c.relnamespace
      where k.contype = 'f' and n.nspname = 'public' order by 1`,
    [],
  )
  return rows.map((row) => row.key)
}

/** A migration after the folder's last, as drizzle-kit would write it. */
function laterMigration(statements: string[]): MigrationMeta {
  const last = readMigrations().at(-1)!
  return { sql: statements, bps: true, folderMillis: last.folderMillis + 1_000, hash: randomBytes(16).toString('hex') }
}

/** Whether the suite's own databases (TEST_DATABASE_URL) are on a Citus cluster: a plain database is then PGlite. */
const SUITE_ON_CITUS = await (async () => {
  if (!process.env.TEST_DATABASE_URL) return false
  const admin = await openDatabase(process.env.TEST_DATABASE_URL, { maxConnections: 1 })
  try {
    return await hasCitus(admin.db)
  } finally {
    await admin.close()
  }
})()

/** A migrated database without Citus: the suite's own (PGlite or the PostgreSQL server), or PGlite when the suite runs on a cluster. */
async function plainTestDatabase(): Promise<TestDatabase> {
  if (!SUITE_ON_CITUS) return createTestDatabase()
  const handle = await openDatabase('pglite:memory', { loadDataDir: await pgliteTemplate() })
  return { ...handle, url: 'pglite:memory' }
}

const WITHOUT_CITUS = SUITE_ON_CITUS
  ? 'without Citus the placement step does nothing (checked on PGlite: the suite database, TEST_DATABASE_URL, is a Citus coordinator)'
  : 'on plain PostgreSQL and PGlite the placement step does nothing'

describe('migrations without Citus', () => {
  let database: TestDatabase
  beforeAll(async () => {
    database = await plainTestDatabase()
    await applyMigrations(database.db)
  })
  afterAll(() => database.close())

  test(WITHOUT_CITUS, async () => {
    expect(await hasCitus(database.db)).toBe(false)
    const keys = await foreignKeys(database.db)
    const outcome = await applyMigrations(database.db, { placements })
    expect(outcome).toEqual({ applied: 0, placed: [] })
    expect(await readPlacement(database.db)).toBeUndefined()
    expect(await foreignKeys(database.db)).toEqual(keys)
    expect(keys.length).toBeGreaterThan(50)
  })
})

const CLUSTER = CITUS_URL ? 'migrations on a Citus cluster' : 'migrations on a Citus cluster (skipped: set TEST_CITUS_URL to a Citus coordinator database)'
describe.skipIf(!CITUS_URL)(CLUSTER, () => {
  const name = `wt_citus_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`
  let cluster: ClusterDatabase
  let database: DatabaseHandle
  let plain: TestDatabase

  beforeAll(async () => {
    cluster = await createClusterDatabase(CITUS_URL!, name)
    database = await openDatabase(cluster.url, { maxConnections: 2 })
    plain = await plainTestDatabase()
  }, 120_000)

  afterAll(async () => {
    await database?.close()
    await plain?.close()
    await cluster?.drop()
  }, 120_000)

  test('a fresh database is migrated with every table placed as its manifest declares, all distributed tables co-located', async () => {
    const outcome = await applyMigrations(database.db, { placements })
    expect(outcome.applied).toBe(readMigrations().length)
    const tables = (await readSchema(database.db)).map((table) => table.name)
    expect(tables.length).toBeGreaterThan(25)
    expect(outcome.placed.map((placed) => placed.table).sort()).toEqual(tables.filter((table) => declaredKind(table) !== 'local').sort())
    expect(await readPlacement(database.db)).toEqual(Object.fromEntries(tables.map((table) => [table, declaredKind(table)])))
    // Not vacuous: each kind is there, and Citus says the same through its own view.
    expect(new Set(tables.map(declaredKind))).toEqual(new Set(['distributed', 'reference', 'local']))
    const citus = await queryText<{ table: string; type: string; column: string; colocation: number }>(
      database.db,
      `select table_name::text as table, citus_table_type as type, distribution_column as column, colocation_id as colocation from citus_tables`,
      [],
    )
    const distributed = citus.filter((row) => row.type === 'distributed')
    expect(distributed.map((row) => row.table).sort()).toEqual(tables.filter((table) => declaredKind(table) === 'distributed').sort())
    expect(new Set(distributed.map((row) => row.column))).toEqual(new Set(['organization_id']))
    expect(new Set(distributed.map((row) => row.colocation)).size).toBe(1)
    expect(citus.filter((row) => row.type === 'reference').map((row) => row.table).sort()).toEqual(tables.filter((table) => declaredKind(table) === 'reference').sort())
  }, 120_000)

  test('every foreign key is there again, as a plain PostgreSQL migration makes it', async () => {
    await applyMigrations(plain.db)
    const expected = await foreignKeys(plain.db)
    expect(expected.length).toBeGreaterThan(50)
    expect(await foreignKeys(database.db)).toEqual(expected)
  })

  test('migrating again is a no-op', async () => {
    const before = await readPlacement(database.db)
    const keys = await foreignKeys(database.db)
    expect(await applyMigrations(database.db, { placements })).toEqual({ applied: 0, placed: [] })
    expect(await readPlacement(database.db)).toEqual(before!)
    expect(await foreignKeys(database.db)).toEqual(keys)
  })

  test('a table placed otherwise than declared is refused, naming it', async () => {
    const { user_emails: _, ...withoutUserEmails } = placements
    await expect(applyMigrations(database.db, { placements: withoutUserEmails as TablePlacements })).rejects.toThrow(
      'user_emails is a reference table on Citus but its plugin declares it distributed',
    )
  })

  test('migrating a worker is refused: the schema is migrated on the coordinator', async () => {
    const worker = await openDatabase(cluster.workerUrls[0]!, { maxConnections: 1 })
    try {
      await expect(applyMigrations(worker.db, { placements })).rejects.toThrow('This database is a Citus worker')
    } finally {
      await worker.close()
    }
  })

  test('a later migration applies on the distributed schema: a new tenant table with keys to users and to a new reference table, a new column', async () => {
    const later = laterMigration([
      `CREATE TABLE "later_codes" ("code" text PRIMARY KEY NOT NULL, "label" text NOT NULL)`,
      `CREATE TABLE "later_notes" ("id" uuid NOT NULL, "organization_id" uuid NOT NULL, "user_id" uuid NOT NULL, "code" text, "body" text NOT NULL,
         CONSTRAINT "later_notes_pkey" PRIMARY KEY("id","organization_id"))`,
      `ALTER TABLE "later_notes" ADD CONSTRAINT "later_notes_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action`,
      `ALTER TABLE "later_notes" ADD CONSTRAINT "later_notes_user_fk" FOREIGN KEY ("user_id","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE cascade ON UPDATE no action`,
      `ALTER TABLE "later_notes" ADD CONSTRAINT "later_notes_code_fk" FOREIGN KEY ("code") REFERENCES "public"."later_codes"("code") ON DELETE no action ON UPDATE no action`,
      `CREATE INDEX "later_notes_user_idx" ON "later_notes" USING btree ("user_id","organization_id")`,
      `ALTER TABLE "users" ADD COLUMN "nickname" text`,
    ])
    const keys = await foreignKeys(database.db)
    const outcome = await applyMigrations(database.db, { migrations: [...readMigrations(), later], placements: { ...placements, later_codes: 'reference' } })
    expect(outcome.applied).toBe(1)
    expect(outcome.placed).toEqual([
      { table: 'later_codes', kind: 'reference' },
      { table: 'later_notes', kind: 'distributed' },
    ])
    const placement = (await readPlacement(database.db))!
    expect([placement.later_notes, placement.later_codes, placement.users]).toEqual(['distributed', 'reference', 'distributed'])
    const [colocated] = await queryText<{ n: number }>(
      database.db,
      `select count(distinct colocationid)::int as n from pg_dist_partition where logicalrelid in ('later_notes'::regclass, 'users'::regclass)`,
      [],
    )
    expect(colocated!.n).toBe(1)
    expect(await foreignKeys(database.db)).toEqual(
      [
        ...keys,
        'later_notes.later_notes_code_fk FOREIGN KEY (code) REFERENCES later_codes(code)',
        'later_notes.later_notes_organization_id_organizations_id_fk FOREIGN KEY (organization_id) REFERENCES organizations(id) ON DELETE CASCADE',
        'later_notes.later_notes_user_fk FOREIGN KEY (user_id, organization_id) REFERENCES users(id, organization_id) ON DELETE CASCADE',
      ].sort(),
    )

    // The new column and the new table's keys hold on the shards.
    const organizationId = randomUUID()
    const userId = randomUUID()
    await queryText(database.db, `insert into organizations (id, name) values ($1, 'Later')`, [organizationId])
    await queryText(database.db, `insert into later_codes (code, label) values ('a', 'A')`, [])
    await queryText(
      database.db,
      `insert into users (id, organization_id, email, username, display_name, password_hash, nickname) values ($1, $2, 'later@example.com', 'later', 'Later', 'x', 'Lat')`,
      [userId, organizationId],
    )
    await queryText(database.db, `insert into later_notes (id, organization_id, user_id, code, body) values ($1, $2, $3, 'a', 'first')`, [randomUUID(), organizationId, userId])
    await expect(queryText(database.db, `insert into later_notes (id, organization_id, user_id, body) values ($1, $2, $3, 'nobody')`, [randomUUID(), organizationId, randomUUID()])).rejects.toThrow(
      /later_notes_user_fk/,
    )
    const [note] = await queryText<{ nickname: string; body: string }>(
      database.db,
      `select u.nickname, n.body from later_notes n join users u on u.id = n.user_id and u.organization_id = n.organization_id where n.organization_id = $1`,
      [organizationId],
    )
    expect(note).toEqual({ nickname: 'Lat', body: 'first' })
    // And once more: nothing left to do.
    expect(await applyMigrations(database.db, { migrations: [...readMigrations(), later], placements: { ...placements, later_codes: 'reference' } })).toEqual({ applied: 0, placed: [] })
  }, 120_000)

  test('a new table Citus cannot distribute stops the migration, naming the table and the reason, and nothing of it is applied', async () => {
    const orphan = laterMigration([`CREATE TABLE "later_orphans" ("id" uuid PRIMARY KEY NOT NULL)`])
    orphan.folderMillis += 1_000 // after the later migration above
    await expect(applyMigrations(database.db, { migrations: [...readMigrations(), orphan], placements: { ...placements, later_codes: 'reference' } })).rejects.toThrow(
      'Citus refused to make later_orphans a distributed table: column "organization_id" of relation "later_orphans" does not exist',
    )
    expect(Object.keys((await readPlacement(database.db))!)).not.toContain('later_orphans')
  })

  test('a database that already holds rows (moved from one server) is placed with its rows, the coordinator keeping no copy', async () => {
    const moved = await createClusterDatabase(CITUS_URL!, `${name}_moved`)
    const handle = await openDatabase(moved.url, { maxConnections: 2 })
    try {
      // Migrated as on a single server (no placements), then rows written: a restored dump.
      await applyMigrations(handle.db)
      await queryText(handle.db, `insert into organizations (id, name) select gen_random_uuid(), 'Organization ' || i from generate_series(1, 40) i`, [])
      await queryText(
        handle.db,
        `insert into users (id, organization_id, email, username, display_name, password_hash)
         select gen_random_uuid(), id, 'user-' || id || '@example.com', 'user', name, 'x' from organizations`,
        [],
      )
      await queryText(handle.db, `insert into user_emails (email, organization_id, user_id) select email, organization_id, id from users`, [])
      const outcome = await applyMigrations(handle.db, { placements })
      expect(outcome.applied).toBe(0)
      expect(outcome.placed.length).toBe(Object.keys((await readPlacement(handle.db))!).filter((table) => declaredKind(table) !== 'local').length)
      const count = async (statement: string) => (await queryText<{ n: number }>(handle.db, statement, []))[0]!.n
      expect(await count(`select count(*)::int as n from users u join organizations o on o.id = u.organization_id`)).toBe(40)
      expect(await count(`select count(*)::int as n from user_emails`)).toBe(40)
      // The shards hold the rows; the coordinator's own copies (the tables' local files) were emptied.
      expect(await count(`select (pg_relation_size('users') + pg_relation_size('organizations') + pg_relation_size('user_emails'))::int as n`)).toBe(0)
    } finally {
      await handle.close()
      await moved.drop()
    }
  }, 120_000)

  test("start-up's migration places a fresh cluster database; the first operator command (key create, which locks its owner) and the key's first request work", async () => {
    const fresh = await createClusterDatabase(CITUS_URL!, `${name}_startup`)
    const handle = await openDatabase(fresh.url, { maxConnections: 4 })
    // Only auth and users enabled: the other plugins' tables are placed all the same (the migrations create them all).
    const api = await startTestService({ database: { ...handle, url: fresh.url }, plugins: ['auth', 'users', 'docs'], log: createLogger('silent') })
    try {
      const placement = (await readPlacement(handle.db))!
      expect(Object.entries(placement).filter(([table, kind]) => kind !== declaredKind(table))).toEqual([])
      expect([placement.webhook_keys, placement.display_usage, placement.sign_in_throttle]).toEqual(['reference', 'distributed', 'local'])
      const organizationId = await api.createOrganization()
      const user = await api.createUser(organizationId, 'administrator')
      const known = new Set(api.service.core.scopes.map((scope) => scope.name))
      const { secret } = await createApiKey(api.service.core.writes, { userId: null, apiKeyId: null, via: 'cli', requestId: null }, user.id, { name: 'laptop', scopes: ['users:read'] }, known, 5)
      const me = await api.request('GET', '/api/v1/users/me', { key: secret })
      expect([me.status, me.body.data?.user?.username]).toEqual([200, user.username])
    } finally {
      await api.stop()
      await handle.close()
      await fresh.drop()
    }
  }, 120_000)
})
