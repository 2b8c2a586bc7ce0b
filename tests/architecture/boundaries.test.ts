/**
 * The plugin boundary holds (docs/plugins.md): imports only through declared
 * dependencies' faces, SQL only on own tables and dependencies' read models, every relation owned
 * once, foreign keys and read models within the declared graph. Each check also proves it fails
 * on a violation planted for it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { getTableName, isTable } from 'drizzle-orm'
import { registry } from '../../plugins'
import { queryText } from '../../src/db'
import { migrate } from '../../src/migrate'
import { auditLogCounts, auditLogs, changeVersions, idempotencyKeys } from '../../src/schema'
import { createTestDatabase, type TestDatabase } from '../helpers/database'
import { benchImportViolations, importViolations, literals, pluginFacts, sourceFiles, sqlViolations, type PluginFacts } from './boundaries'

const ROOT = process.cwd()
const CORE_TABLES = [getTableName(auditLogs), getTableName(auditLogCounts), getTableName(idempotencyKeys), getTableName(changeVersions)]

const facts: PluginFacts[] = registry.map(pluginFacts)
const ownerOf = new Map<string, string>()
for (const table of CORE_TABLES) ownerOf.set(table, 'core')
for (const plugin of facts) for (const relation of [...plugin.tables, ...plugin.readModels]) ownerOf.set(relation, plugin.name)
const byName = new Map(facts.map((plugin) => [plugin.name, plugin]))

describe('imports', () => {
  const files = sourceFiles(ROOT, ['src', 'plugins', 'entries'])

  test('the core imports no plugin; a plugin imports another only through a declared dependency\'s index, api or schema', () => {
    expect(importViolations(files, facts)).toEqual([])
  })

  test('the check refuses a forbidden edge (a test of the test)', () => {
    const planted = new Map([
      ['src/app.ts', "import { registry } from '../plugins'"],
      ['plugins/teams/service.ts', "import { createProjectAccess } from '../projects/access'"],
      ['plugins/push/messages.ts', "import { findPage } from '../display/pages-service'\nimport { pages } from '../display/schema'"],
      ['plugins/push/schema.ts', "import { pages } from '../display/schema'"],
    ])
    const problems = importViolations(planted, facts)
    expect(problems).toHaveLength(4)
    expect(problems[0]).toContain('the core imports no plugin')
    expect(problems[1]).toContain('does not declare "projects"')
    expect(problems[2]).toContain('only index.ts, api.ts and schema.ts')
    expect(problems[3]).toContain("foreign keys in schema.ts only")
  })
})

describe('imports of the benchmarks', () => {
  const files = sourceFiles(ROOT, ['bench'])

  test('bench/ reaches a plugin only through its api.ts', () => {
    expect(benchImportViolations(files)).toEqual([])
  })

  test('the check refuses a plugin inside, and lets a face and the plugin list through (a test of the test)', () => {
    const planted = new Map([
      ['bench/scenarios/a.ts', "import { grantOf } from '../../plugins/projects/grant-kinds'\nimport { ProjectAccessRef } from '../../plugins/projects/api'\nimport { registry } from '../../plugins'"],
      ['bench/lib/b.ts', "import type { WorkItemRow } from '../../plugins/work-items/schema'\nconst service = await import('../../plugins/work-items/service')"],
    ])
    const problems = benchImportViolations(planted)
    expect(problems).toHaveLength(3)
    expect(problems[0]).toContain('bench/scenarios/a.ts → plugins/projects/grant-kinds.ts: a benchmark reaches a plugin only through its api.ts')
    expect(problems[1]).toContain('bench/lib/b.ts → plugins/work-items/schema.ts')
    expect(problems[2]).toContain('bench/lib/b.ts → plugins/work-items/service.ts')
  })
})

describe('SQL text', () => {
  const files = sourceFiles(ROOT, ['plugins'])

  test('every relation a plugin names in SQL is its own, a read model of a dependency, or the core\'s', () => {
    expect(sqlViolations(files, facts, CORE_TABLES)).toEqual([])
  })

  test('the check refuses SQL on another plugin\'s table, and a read model of a plugin not depended on (a test of the test)', () => {
    const planted = new Map([
      ['plugins/teams/service.ts', 'const q = `select u.username from team_members tm join users u on u.id = tm.user_id`'],
      ['plugins/work-items/service.ts', "const q = 'select 1 from page_viewers'\nconst t = candidates('entries', 'body')"],
    ])
    const problems = sqlViolations(planted, facts, CORE_TABLES)
    expect(problems.some((problem) => problem.includes('"users"'))).toBe(true)
    expect(problems.some((problem) => problem.includes('"page_viewers"'))).toBe(true)
    expect(problems.some((problem) => problem.includes('"entries"'))).toBe(true)
    expect(problems.some((problem) => problem.includes('"team_members"'))).toBe(false)
  })

  test('literals are read from strings and templates, not from comments or code', () => {
    expect(literals("// from users\nconst a = 'from teams' + `x ${`join pages`} y` /* into projects */")).toEqual(['from teams', 'join pages', 'x   y'])
  })
})

/**
 * Leaves out relations an extension owns (pg_depend deptype 'e'): Citus puts views of its own in
 * the public schema (`citus_tables`, `citus_schemas`); no plugin owns them or could.
 */
const NOT_FROM_AN_EXTENSION = (relation: string) =>
  `not exists (select 1 from pg_depend e where e.classid = 'pg_class'::regclass and e.objid = ${relation}.oid and e.deptype = 'e')`

describe('the live schema', () => {
  let database: TestDatabase
  beforeAll(async () => {
    database = await createTestDatabase()
    await migrate(database.db)
  })
  afterAll(() => database.close())

  test('every table and view belongs to exactly one plugin (or the core)', async () => {
    const relations = await queryText<{ name: string }>(
      database.db,
      `select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'public' and c.relkind in ('r', 'v', 'p') and ${NOT_FROM_AN_EXTENSION('c')} order by 1`,
      [],
    )
    expect(relations.filter(({ name }) => !ownerOf.has(name)).map(({ name }) => name)).toEqual([])
    const declared = [...CORE_TABLES, ...facts.flatMap((plugin) => [...plugin.tables, ...plugin.readModels])]
    expect(new Set(declared).size).toBe(declared.length)
  })

  test('foreign keys point at the owner\'s tables or a declared dependency\'s', async () => {
    const keys = await queryText<{ child: string; parent: string }>(
      database.db,
      `select c.relname as child, p.relname as parent from pg_constraint k join pg_class c on c.oid = k.conrelid join pg_class p on p.oid = k.confrelid where k.contype = 'f'`,
      [],
    )
    expect(keys.length).toBeGreaterThan(10)
    const wrong = keys.filter(({ child, parent }) => {
      const from = ownerOf.get(child)!
      const to = ownerOf.get(parent)!
      return from !== to && !byName.get(from)?.dependencies.includes(to)
    })
    expect(wrong).toEqual([])
  })

  test("a read model reads only its owner's tables and its owner's dependencies' read models", async () => {
    const uses = await queryText<{ view: string; used: string }>(
      database.db,
      `select distinct v.relname as view, t.relname as used from pg_depend d join pg_rewrite r on r.oid = d.objid
         join pg_class v on v.oid = r.ev_class join pg_class t on t.oid = d.refobjid join pg_namespace n on n.oid = v.relnamespace
        where n.nspname = 'public' and v.relkind = 'v' and t.oid <> v.oid and t.relkind in ('r', 'v') and ${NOT_FROM_AN_EXTENSION('v')}`,
      [],
    )
    expect(uses.length).toBeGreaterThan(0)
    const wrong = uses.filter(({ view, used }) => {
      const owner = byName.get(ownerOf.get(view) ?? '')
      // A view no plugin declares is reported here too (and by the test above).
      if (!owner) return true
      if (owner.tables.includes(used)) return false
      return !owner.dependencies.some((dependency) => byName.get(dependency)?.readModels.includes(used))
    })
    expect(wrong).toEqual([])
  })
})
