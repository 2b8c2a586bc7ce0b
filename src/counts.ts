/**
 * Counts maintained in the writing transaction: a list's exact `totalItems` read from a
 * few rows instead of counted over the list. A count table holds, per scope (a project, a work
 * item, …) and per value of one low-cardinality column (a status, a kind), how many rows the
 * owning plugin's table has; the owner moves it in the transaction of each change, here.
 */
import { sql, type SQL } from 'drizzle-orm'
import type { Executor } from './db'
import type { ListQuery } from './http/list-query'
import { param, runQuery } from './statements'

/** A count table: `(scope, key, organization_id)` → `items`. */
export interface CountTable {
  table: string
  /** The scope column (e.g. `project_id`). */
  scope: string
  /** The counted column (e.g. `status`). */
  key: string
  /** The list filter on that column (e.g. `status`): a list filtered by it alone reads the counts. */
  filter: string
}

/**
 * Moves the counts of `scopeId` by `changes` (key → delta): one statement on the scope's rows,
 * taken in key order so two transactions never wait on each other's rows in turn. (No CHECK on
 * `items`: PostgreSQL checks the row an upsert proposes, so a decrement proposed as -1 would fail
 * before it met the existing row.)
 */
export async function moveCounts(tx: Executor, counts: CountTable, organizationId: string, scopeId: string, changes: Readonly<Record<string, number>>): Promise<void> {
  const upsert = countUpsert(counts, changes, param(scopeId), param(organizationId))
  if (upsert) await runQuery(tx, upsert)
}

/**
 * The upsert of `moveCounts` as a fragment, or undefined when nothing moves: for a statement that
 * carries it as a data-modifying CTE (the audit record's, src/audit.ts). `scope` and
 * `organization` are the scope's and the organization's ids as fragments (bound values).
 */
export function countUpsert(counts: CountTable, changes: Readonly<Record<string, number>>, scope: SQL, organization: SQL): SQL | undefined {
  const moved = Object.entries(changes)
    .filter(([, delta]) => delta !== 0)
    .sort(([a], [b]) => (a < b ? -1 : 1))
  if (!moved.length) return undefined
  const rows = moved.map(([key, delta]) => sql`(${scope}::uuid, ${key}, ${organization}::uuid, ${delta}::int)`)
  return sql`insert into ${sql.raw(counts.table)} (${sql.raw(`${counts.scope}, ${counts.key}`)}, organization_id, items) values ${sql.join(rows, sql`, `)}
       on conflict (${sql.raw(`${counts.scope}, ${counts.key}`)}, organization_id) do update set items = ${sql.raw(counts.table)}.items + excluded.items`
}

/**
 * The scalar total of a list of the scope `scope` (the count's scope, e.g. a project's id) in
 * `organization` (both bound fragments): the maintained counts when the query filters by nothing
 * but `counts.filter` (the filter on the counted column), else a count of the rows `from` and
 * `conditions` select (their index serves it).
 */
export function listTotal(counts: CountTable, query: ListQuery, scope: { scope: SQL; organization: SQL }, from: string, conditions: readonly SQL[]): SQL {
  if (!Object.keys(query.values).every((filter) => filter === counts.filter)) return sql`select count(*) from ${sql.raw(from)} where ${sql.join([...conditions], sql` and `)}`
  const keys = query.values[counts.filter]
  const counted = sql`select coalesce(sum(c.items), 0) from ${sql.raw(counts.table)} c where c.${sql.raw(counts.scope)} = ${scope.scope} and c.organization_id = ${scope.organization}`
  return keys ? sql`${counted} and c.${sql.raw(counts.key)} = any(${param(keys.anyOf)}::text[])` : counted
}
