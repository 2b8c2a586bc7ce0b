/**
 * The schema is ready to be distributed by organization on Citus (docs/scaling.md): every
 * tenant table's primary key, unique indexes and foreign keys include organization_id, or the
 * table is declared a reference or local table, with a reason, by the plugin that owns it. Read
 * from the live schema; the check is shown to fail on tables planted to break each rule; the
 * docs/scaling.md prints, as a reference, the statements of the placement the migrations make
 * (citus-migrate.test.ts makes it on a real cluster).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { getTableName, isTable } from 'drizzle-orm'
import { registry } from '../../plugins'
import { queryText } from '../../src/db'
import { migrate } from '../../src/migrate'
import { createTestDatabase, type TestDatabase } from '../helpers/database'
import { citusStatements, placementProblems, readSchema, type Placement } from './citus'

const declared = new Map<string, { plugin: string; kind: Placement; reason: string }>()
for (const plugin of registry) for (const [table, placement] of Object.entries(plugin.placement ?? {})) declared.set(table, { plugin: plugin.name, ...placement })
const placementOf = (table: string): Placement => declared.get(table)?.kind ?? 'distributed'

describe('Citus readiness', () => {
  let database: TestDatabase
  beforeAll(async () => {
    database = await createTestDatabase()
    await migrate(database.db)
  })
  afterAll(() => database.close())

  test('every table meets its placement: organization_id in each key of a distributed table, reference and local tables apart', async () => {
    const tables = await readSchema(database.db)
    expect(tables.length).toBeGreaterThan(20)
    expect(placementProblems(tables, placementOf)).toEqual([])
    // Not vacuous: most tables are distributed, with composite foreign keys among them.
    const distributed = tables.filter((table) => placementOf(table.name) === 'distributed')
    expect(distributed.length).toBeGreaterThan(15)
    expect(distributed.flatMap((table) => table.foreignKeys).filter((key) => placementOf(key.parent) === 'distributed').length).toBeGreaterThan(20)
  })

  test("a declared placement names one of its plugin's tables and gives a reason", () => {
    expect(declared.size).toBeGreaterThan(0)
    for (const [table, placement] of declared) {
      const plugin = registry.find((candidate) => candidate.name === placement.plugin)!
      const own = Object.values(plugin.tables ?? {})
        .filter(isTable)
        .map((owned) => getTableName(owned))
      expect(own).toContain(table)
      expect(placement.reason.length).toBeGreaterThan(20)
    }
  })

  test('the check fails on a table planted to break each rule', async () => {
    const planted = ['planted_no_tenant', 'planted_key', 'planted_unique', 'planted_pairing', 'planted_reference']
    const problems = await database.db
      .transaction(async (tx) => {
        await queryText(tx, 'create table planted_no_tenant (id uuid primary key)', [])
        await queryText(tx, 'create table planted_key (id uuid primary key, organization_id uuid not null)', [])
        await queryText(tx, 'create table planted_unique (id uuid, organization_id uuid not null, code text, primary key (id, organization_id))', [])
        await queryText(tx, 'create unique index planted_unique_code on planted_unique (code)', [])
        await queryText(
          tx,
          `create table planted_pairing (id uuid, organization_id uuid not null, project_id uuid, primary key (id, organization_id),
             constraint planted_pairing_fk foreign key (organization_id, project_id) references projects (id, organization_id))`,
          [],
        )
        await queryText(
          tx,
          `create table planted_reference (id uuid primary key, user_id uuid, organization_id uuid,
             constraint planted_reference_fk foreign key (user_id, organization_id) references users (id, organization_id))`,
          [],
        )
        const found = placementProblems(await readSchema(tx), (table) => (table === 'planted_reference' ? 'reference' : placementOf(table)))
        throw Object.assign(new Error('roll back'), { found })
      })
      .catch((error: { found?: string[] }) => error.found ?? [])
    expect(problems).toEqual([
      'planted_key: primary key (id) lacks organization_id',
      'planted_no_tenant: no NOT NULL organization_id to distribute by',
      'planted_no_tenant: primary key (id) lacks organization_id',
      'planted_pairing: foreign key planted_pairing_fk to projects does not pair organization_id with organization_id',
      'planted_reference: foreign key planted_reference_fk from a reference table to the distributed table users',
      'planted_unique: unique index planted_unique_code lacks organization_id',
    ])
    // Rolled back: the real schema is as it was.
    const names = (await readSchema(database.db)).map((table) => table.name)
    for (const name of planted) expect(names).not.toContain(name)
  })

  test("docs/scaling.md's Citus section gives, as a reference, the statements of the placement the migrations make, parents first", async () => {
    const statements = citusStatements(await readSchema(database.db), placementOf)
    expect(statements[0]).toBe("select create_reference_table('organizations');")
    expect(statements).toContain("select create_reference_table('user_emails');")
    expect(statements.indexOf("select create_distributed_table('users', 'organization_id');")).toBeGreaterThan(0)
    // A parent comes before every child that points at it.
    const position = (table: string) => statements.findIndex((statement) => statement.includes(`'${table}'`))
    expect(position('projects')).toBeLessThan(position('work_items'))
    expect(position('work_items')).toBeLessThan(position('entries'))
    expect(position('pages')).toBeLessThan(position('messages'))
    const block = /```sql\n(select create_reference_table[\s\S]*?)\n```/.exec(readFileSync('docs/scaling.md', 'utf8'))
    expect(block?.[1].split('\n')).toEqual(statements)
  })
})
