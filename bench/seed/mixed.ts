/**
 * The mixed load's data and requests: a read project (2,000 work items, 2,000 entries, 50 members),
 * 20 teams, a write project every create goes to, 8 display accounts; and the fixed cycle of API v1
 * reads and writes, search, `POST /api/component` and MCP calls every connection runs through, as
 * wrk's Lua that tallies each answer under its kind.
 */
import { sql } from 'drizzle-orm'
import { queryRows } from '../../src/db'
import { seededDatabase } from '../lib/database'
import { luaValue } from '../lib/wrk'
import { VOCABULARY } from './corpus'
import { componentBody, seedDisplayAccounts } from './display'
import { seedMembers, seedOrganization, seedProject } from './organization'
import { seedWork } from './work'

const SCOPES = ['work_items:read', 'work_items:write', 'entries:read', 'entries:write', 'relationships:read', 'project_access:read', 'teams:read']

export interface Fixture {
  secret: string
  readProject: string
  writeProject: string
  /** Work items of the read project (reads), of the write project (updates), and one entry on each of the latter. */
  readItems: string[]
  writeItems: string[]
  writeEntries: Array<{ workItemId: string; entryId: string }>
  displayBodies: string[]
}

/** A fresh database with the mix's data. */
export async function seedMixed(): Promise<{ url: string; fixture: Fixture }> {
  const { url, seeded } = await seededDatabase('worktrack_bench_mixed', async (db) => {
    const seeded = await seedOrganization(db, { scopes: SCOPES })
    // The read project: 2,000 work items and 2,000 entries to list and search, 50 members, and
    // 20 teams in the organization. It never changes during the run, so its reads cost the same
    // at the end as at the start.
    await seedWork(db, seeded, { workItems: 2_000, entries: 2_000 })
    await seedMembers(db, seeded.organizationId, 49, seeded.projectId)
    await db.execute(sql`insert into teams (id, organization_id, name) select gen_random_uuid(), ${seeded.organizationId}, 'Team ' || i from generate_series(1, 20) as i`)
    // The write project: every create lands here, updates go to its first 20 work items.
    const write = await seedProject(db, seeded.organizationId, seeded.userId, 'Bench writes')
    await seedWork(db, { ...seeded, projectId: write }, { workItems: 20, entries: 20 })
    const readItems = await queryRows<{ id: string }>(db, sql`select id from work_items where project_id = ${seeded.projectId} order by number limit 20`)
    const writeEntries = await queryRows<{ workItemId: string; entryId: string }>(
      db,
      sql`select distinct on (e.work_item_id) e.work_item_id as "workItemId", e.id as "entryId" from entries e where e.project_id = ${write} order by e.work_item_id, e.position`,
    )
    const display = await seedDisplayAccounts(db, seeded.organizationId, 8)
    await db.execute(sql`analyze`)
    return {
      secret: seeded.secret,
      readProject: seeded.projectId,
      writeProject: write,
      readItems: readItems.map((row) => row.id),
      writeItems: writeEntries.map((row) => row.workItemId),
      writeEntries,
      displayBodies: display.map((account) => componentBody(account)),
    }
  })
  return { url, fixture: seeded }
}

export interface RequestSpec {
  kind: string
  method: 'GET' | 'POST' | 'PATCH'
  path: string
  headers: Record<string, string>
  body?: string
  paths?: string[]
  bodies?: string[]
  mcp?: boolean
}

/** The same words, prefixes and pairs on every run. */
function searchTerms(count: number): string[] {
  let seed = 7
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
  const word = () => VOCABULARY[Math.floor(next() * VOCABULARY.length)]!
  return Array.from({ length: count }, (_, i) => (i % 3 === 0 ? word() : i % 3 === 1 ? `${word()} ${word()}` : word().slice(0, 4)))
}

/** The fixed cycle every connection runs through: 20 requests, in this order. */
export function requestMix(fixture: Fixture): RequestSpec[] {
  const v1 = { authorization: `Bearer ${fixture.secret}` }
  const json = { ...v1, 'content-type': 'application/json' }
  const mcpHeaders = { ...json, accept: 'application/json, text/event-stream' }
  const terms = searchTerms(60)
  const rpc = (name: string, args: Record<string, unknown>) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } })
  const list: RequestSpec = {
    kind: 'v1 list work items',
    method: 'GET',
    path: `/api/v1/projects/${fixture.readProject}/work-items?size=20`,
    paths: [`/api/v1/projects/${fixture.readProject}/work-items?size=20`, `/api/v1/projects/${fixture.readProject}/work-items?size=20&status=todo`, `/api/v1/projects/${fixture.readProject}/work-items?size=20&page=3`],
    headers: v1,
  }
  const members: RequestSpec = { kind: 'v1 list members', method: 'GET', path: `/api/v1/projects/${fixture.readProject}/members?size=20`, headers: v1 }
  const teams: RequestSpec = { kind: 'v1 list teams', method: 'GET', path: '/api/v1/teams?size=20', headers: v1 }
  const searchPaths = terms.map((q) => `/api/v1/projects/${fixture.readProject}/search?q=${encodeURIComponent(q)}&limit=20`)
  const search: RequestSpec = { kind: 'search', method: 'GET', path: searchPaths[0]!, paths: searchPaths, headers: v1 }
  const component: RequestSpec = { kind: 'POST /api/component', method: 'POST', path: '/api/component', headers: { 'content-type': 'application/json' }, body: fixture.displayBodies[0], bodies: fixture.displayBodies }
  const titles = terms.map((q, i) => JSON.stringify({ title: `Mixed ${i}: ${q}`, description: `Created under the mixed load (${q}).`, priority: i % 5 }))
  const createItem: RequestSpec = { kind: 'v1 create work item', method: 'POST', path: `/api/v1/projects/${fixture.writeProject}/work-items`, headers: json, body: titles[0], bodies: titles }
  const itemPaths = fixture.writeItems.map((id) => `/api/v1/projects/${fixture.writeProject}/work-items/${id}`)
  const patches = [{ status: 'in_progress' }, { status: 'todo', priority: 2 }, { title: 'Renamed under load', status: 'done' }].map((patch) => JSON.stringify(patch))
  const updateItem: RequestSpec = { kind: 'v1 update work item', method: 'PATCH', path: itemPaths[0]!, paths: itemPaths, headers: json, body: patches[0], bodies: patches }
  const entryBodies = terms.map((q) => JSON.stringify({ body: `A comment about ${q}.` }))
  const createEntry: RequestSpec = {
    kind: 'v1 create entry',
    method: 'POST',
    path: `/api/v1/work-items/${fixture.writeItems[0]}/entries`,
    paths: fixture.writeItems.map((id) => `/api/v1/work-items/${id}/entries`),
    headers: json,
    body: entryBodies[0],
    bodies: entryBodies,
  }
  const entryPaths = fixture.writeEntries.map((entry) => `/api/v1/work-items/${entry.workItemId}/entries/${entry.entryId}`)
  const entryPatches = [JSON.stringify({ body: 'Edited under load.' }), JSON.stringify({ kind: 'note' }), JSON.stringify({ body: 'Edited again.', kind: 'comment' })]
  const updateEntry: RequestSpec = { kind: 'v1 update entry', method: 'PATCH', path: entryPaths[0]!, paths: entryPaths, headers: json, body: entryPatches[0], bodies: entryPatches }
  const mcp = (kind: string, bodies: string[]): RequestSpec => ({ kind: `MCP ${kind}`, method: 'POST', path: '/mcp', headers: mcpHeaders, body: bodies[0], bodies, mcp: true })
  const mcpList = mcp('list_work_items', [rpc('list_work_items', { projectId: fixture.readProject, size: 20 }), rpc('list_work_items', { projectId: fixture.readProject, size: 20, status: 'done' })])
  const mcpSearch = mcp('search_project', terms.map((q) => rpc('search_project', { projectId: fixture.readProject, q, limit: 10 })))
  const mcpGet = mcp('get_work_item', fixture.readItems.map((id) => rpc('get_work_item', { projectId: fixture.readProject, workItemId: id })))
  const mcpUpdate = mcp(
    'update_work_item',
    fixture.writeItems.map((id, i) => rpc('update_work_item', { projectId: fixture.writeProject, workItemId: id, priority: i % 5 })),
  )
  return [list, component, members, mcpList, createItem, search, component, teams, updateItem, mcpSearch, list, component, createEntry, mcpGet, search, updateEntry, component, members, mcpUpdate, list]
}

export interface KindCounts {
  count: number
  non2xx: number
  server: number
  toolErrors: number
}

/** Every request kind answers 2xx (and MCP without a tool error) before the load starts. */
export async function probe(base: string, specs: RequestSpec[]): Promise<void> {
  const seen = new Set<string>()
  for (const spec of specs) {
    if (seen.has(spec.kind)) continue
    seen.add(spec.kind)
    const response = await fetch(`${base}${spec.path}`, { method: spec.method, headers: spec.headers, body: spec.body })
    const text = await response.text()
    const refused = spec.mcp && (text.includes('"isError":true') || !text.includes('"result":'))
    if (!response.ok || refused) throw new Error(`${spec.kind}: ${spec.method} ${spec.path} answered ${response.status}: ${text.slice(0, 300)}`)
  }
}

/**
 * wrk's Lua for the mix: the requests of the cycle in turn, each position with its own turn
 * through its paths and bodies. Every request carries `X-Request-Id: bench-kind-<n>`, which the
 * service echoes, so `response()` can tally each answer under its kind — wrk's own figures do not
 * tell kinds apart. An MCP answer that is a tool refusal (`isError`) or no result is a tool error,
 * and a server error when it is no result (a JSON-RPC error) or its status is 5xx.
 */
export function mixScript(specs: RequestSpec[], kinds: string[]): string {
  const mix = specs.map((spec) => ({
    method: spec.method,
    headers: { ...spec.headers, 'x-request-id': `bench-kind-${kinds.indexOf(spec.kind)}` },
    paths: spec.paths ?? [spec.path],
    bodies: spec.bodies ?? (spec.body === undefined ? undefined : [spec.body]),
  }))
  const mcpKinds = kinds.flatMap((kind, i) => (specs.some((spec) => spec.kind === kind && spec.mcp) ? [`["${i}"] = true`] : []))
  return `local mix = ${luaValue(mix)}
local mcp = {${mcpKinds.join(', ')}}
local turns, position = {}, 0
function request()
  position = position % #mix + 1
  local spec, turn = mix[position], turns[position] or 0
  turns[position] = turn + 1
  local body = spec.bodies and spec.bodies[turn % #spec.bodies + 1]
  return wrk.format(spec.method, spec.paths[turn % #spec.paths + 1], spec.headers, body)
end
function response(status, headers, body)
  local kind = string.match(headers["x-request-id"] or headers["X-Request-Id"] or "", "^bench%-kind%-(%d+)$") or "unknown"
  count(kind .. " " .. status)
  if mcp[kind] and status >= 200 and status < 300 then
    local result = string.find(body, '"result":', 1, true)
    if string.find(body, '"isError":true', 1, true) or not result then
      count(kind .. " tool")
      if not result or string.find(body, '"status":5%d%d') then count(kind .. " server") end
    end
  end
end`
}

/** The tallies of one wrk run (`<kind> <status>`, `<kind> tool`, `<kind> server`) by kind name. */
export function kindsOf(counts: Record<string, number>, kinds: string[]): Record<string, KindCounts> {
  const result: Record<string, KindCounts> = {}
  for (const [name, n] of Object.entries(counts)) {
    const [index, what] = name.split(' ') as [string, string]
    const kind = (result[kinds[Number(index)] ?? 'unknown: no X-Request-Id of the mix in the answer'] ??= { count: 0, non2xx: 0, server: 0, toolErrors: 0 })
    if (what === 'tool') kind.toolErrors += n
    else if (what === 'server') kind.server += n
    else {
      const status = Number(what)
      kind.count += n
      if (status < 200 || status >= 300) kind.non2xx += n
      if (status >= 500) kind.server += n
    }
  }
  return result
}

