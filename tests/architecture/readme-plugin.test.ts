/**
 * The example plugin of "Writing a plugin" (docs/plugins.md) is real: its code blocks are written out
 * as a plugin beside the real ones (in a scratch tree whose src/ and plugins/ link to this
 * repository's), its table is created from its schema, and it must obey the import, SQL and
 * Citus rules and answer over REST and MCP like any plugin.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { generateDrizzleJson, generateMigration } from 'drizzle-kit/api'
import { registry } from '../../plugins'
import { queryText } from '../../src/db'
import type { MigrationMeta } from 'drizzle-orm/migrator'
import { declaredPlacements, readPlacement } from '../../src/citus'
import { migrate, readMigrations } from '../../src/migrate'
import type { AnyPlugin } from '../../src/plugin'
import { createTestDatabase, type TestDatabase } from '../helpers/database'
import { callTool, connectMcp, listen, type Listening } from '../helpers/mcp'
import { startTestService, type TestService } from '../helpers/service'
import { importViolations, pluginFacts, sqlViolations } from './boundaries'
import { placementProblems, readSchema } from './citus'

const ROOT = process.cwd()
const SCRATCH = resolve('node_modules/.cache/worktrack/readme-plugin')

/** The example's files: `path → text`, from the ts blocks of docs/plugins.md that start with `// plugins/…`. */
function exampleFiles(): Map<string, string> {
  const section = readFileSync('docs/plugins.md', 'utf8')
  const files = new Map<string, string>()
  for (const [, path, text] of section.matchAll(/```ts\n\/\/ (plugins\/[\w-]+\/[\w.-]+\.ts)\n([\s\S]*?)```/g)) files.set(path!, text!)
  return files
}

const files = exampleFiles()
let example: AnyPlugin
let database: TestDatabase
let api: TestService
let http: Listening

beforeAll(async () => {
  // A scratch tree: src/ and every real plugin linked, the example written out as plugins/<name>/.
  rmSync(SCRATCH, { recursive: true, force: true })
  mkdirSync(join(SCRATCH, 'plugins'), { recursive: true })
  symlinkSync(join(ROOT, 'src'), join(SCRATCH, 'src'))
  // The example's own folder is never a link: writing it must not reach into a real plugin.
  const exampleFolders = new Set([...files.keys()].map((path) => path.split('/')[1]))
  for (const name of readdirSync(join(ROOT, 'plugins'), { withFileTypes: true }))
    if (name.isDirectory()) {
      if (exampleFolders.has(name.name)) throw new Error(`the example plugin of docs/plugins.md, "${name.name}", has the name of a real plugin: rename the example`)
      symlinkSync(join(ROOT, 'plugins', name.name), join(SCRATCH, 'plugins', name.name))
    }
  for (const [path, text] of files) {
    mkdirSync(join(SCRATCH, path, '..'), { recursive: true })
    writeFileSync(join(SCRATCH, path), text)
  }
  const manifest = [...files.keys()].find((path) => path.endsWith('/index.ts'))!
  example = (await import(join(SCRATCH, manifest))).default as AnyPlugin
  const schema = await import(join(SCRATCH, manifest.replace('index.ts', 'schema.ts')))

  // Its table, as `npm run db:generate` would write its migration, applied as `npm run db:migrate`
  // and start-up apply a new one: on Citus its table is placed as the manifests declare before its
  // foreign keys are added (Citus refuses a key from a table not placed yet to a distributed one).
  database = await createTestDatabase()
  await migrate(database.db, readMigrations(), declaredPlacements(registry))
  const statements = await generateMigration(generateDrizzleJson({}, undefined, undefined, 'snake_case'), generateDrizzleJson(schema, undefined, undefined, 'snake_case'))
  const last = readMigrations().at(-1)!
  const migration: MigrationMeta = { sql: statements, bps: true, folderMillis: last.folderMillis + 1_000, hash: 'readme-example-plugin' }
  expect(await migrate(database.db, [...readMigrations(), migration], declaredPlacements([...registry, example]))).toBe(1)

  api = await startTestService({ registry: [...registry, example], database })
  http = listen(api)
})
afterAll(async () => {
  http?.stop()
  await api?.stop()
  await database?.close()
  rmSync(SCRATCH, { recursive: true, force: true })
})

describe("docs/plugins.md's example plugin", () => {
  test('has the four files the docs show, and a manifest the loader accepts', () => {
    expect([...files.keys()].sort()).toEqual(['plugins/milestones/api.ts', 'plugins/milestones/index.ts', 'plugins/milestones/schema.ts', 'plugins/milestones/service.ts'])
    expect(example.name).toBe('milestones')
    expect(api.service.core.tools.map((tool) => tool.name)).toContain('list_milestones')
  })

  test('imports and SQL stay within its declared dependencies', () => {
    const all = [...registry, example].map(pluginFacts)
    expect(importViolations(files, all)).toEqual([])
    expect(sqlViolations(files, all, [])).toEqual([])
    // The checks see the example: the same files with an undeclared import fail.
    const planted = new Map(files)
    planted.set('plugins/milestones/extra.ts', "import { workItems } from '../work-items/schema'\nexport const x = workItems\n")
    expect(importViolations(planted, all)).toHaveLength(1)
  })

  test('its table is ready for Citus', async () => {
    const tables = (await readSchema(database.db)).filter((table) => table.name === 'milestones')
    expect(tables).toHaveLength(1)
    const placements = new Map(registry.flatMap((plugin) => Object.entries(plugin.placement ?? {}).map(([table, placement]) => [table, placement.kind] as const)))
    expect(placementProblems(tables, (table) => placements.get(table) ?? 'distributed')).toEqual([])
    // On Citus (undefined elsewhere) its migration distributed it, as a tenant table with no declared placement.
    const placed = await readPlacement(database.db)
    if (placed) expect(placed.milestones).toBe('distributed')
  })

  test('viewers read, editors add, other organizations see nothing, over REST and MCP', async () => {
    const organization = await api.createOrganization()
    const owner = await api.createUser(organization)
    const viewer = await api.createUser(organization)
    const stranger = await api.createUser(await api.createOrganization(), 'superadministrator')
    const ownerKey = (await api.createKey(owner.id, ['projects:write', 'project_access:write', 'milestones:read', 'milestones:write'])).secret
    const viewerKey = (await api.createKey(viewer.id, ['milestones:read', 'milestones:write'])).secret
    const strangerKey = (await api.createKey(stranger.id, ['milestones:read', 'milestones:write'])).secret
    const project = (await api.request('POST', '/api/v1/projects', { key: ownerKey, body: { name: 'Milestoneled' } })).body.data
    expect((await api.request('POST', `/api/v1/projects/${project.id}/members`, { key: ownerKey, body: { userId: viewer.id, accessLevel: 'viewer' } })).status).toBe(201)

    const path = `/api/v1/projects/${project.id}/milestones`
    const added = await api.request('POST', path, { key: ownerKey, body: { name: 'bug' } })
    expect(added.status).toBe(201)
    expect(added.body.data).toEqual({ id: expect.any(String), name: 'bug' })
    expect((await api.request('POST', path, { key: ownerKey, body: { name: 'bug' } })).status).toBe(409)
    expect((await api.request('POST', path, { key: ownerKey, body: { name: '' } })).status).toBe(400)
    expect((await api.request('GET', path, { key: viewerKey })).body.data).toEqual([added.body.data])
    expect((await api.request('POST', path, { key: viewerKey, body: { name: 'mine' } })).status).toBe(403)
    expect((await api.request('GET', path, { key: strangerKey })).status).toBe(404)
    expect((await api.request('POST', path, { key: strangerKey, body: { name: 'theirs' } })).status).toBe(404)

    const [audit] = await queryText<{ action: string }>(database.db, "select action from audit_logs where resource_type = 'milestone' and resource_id = $1", [added.body.data.id])
    expect(audit).toEqual({ action: 'milestone.created' })

    const client = await connectMcp(http.url, viewerKey)
    try {
      const listed = await callTool(client, 'list_milestones', { projectId: project.id })
      expect(listed.isError).toBe(false)
      expect(listed.data).toEqual({ items: [added.body.data] })
    } finally {
      await client.close()
    }
  })
})
