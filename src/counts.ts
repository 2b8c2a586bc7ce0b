/**
 * Counts maintained in the writing transaction: a list's exact `totalItems` read from a
 * few rows instead of counted over the list. A count table holds, per scope (a project, a work
 * item, …) and per value of one low-cardinality column (a status, a kind), how many rows the
 * owning plugin's table has; the owner moves it in the transaction of each change, here.
 */
import { queryText, type Executor } from './db'
import type { ListQuery, Parameters } from './http/list-query'

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
  const parameters: unknown[] = [scopeId, organizationId]
  const upsert = countUpsert(counts, changes, parameters, '$1', '$2')
  if (upsert) await queryText(tx, upsert, parameters)
}

/**
 * The upsert of `moveCounts` as statement text, its values bound into `parameters` (`scope` and
 * `organization` are placeholders already bound), or undefined when nothing moves: for a
 * statement that carries it as a data-modifying CTE (the audit record's, src/audit.ts).
 */
export function countUpsert(counts: CountTable, changes: Readonly<Record<string, number>>, parameters: unknown[], scope: string, organization: string): string | undefined {
  const moved = Object.entries(changes)
    .filter(([, delta]) => delta !== 0)
    .sort(([a], [b]) => (a < b ? -1 : 1))
  if (!moved.length) return undefined
  const rows = moved.map(([key, delta]) => `(${scope}::uuid, $${parameters.push(key)}, ${organization}::uuid, $${parameters.push(delta)}::int)`)
  return `insert into ${counts.table} (${counts.scope}, ${counts.key}, organization_id, items) values ${rows.join(', ')}
       on conflict (${counts.scope}, ${counts.key}, organization_id) do update set items = ${counts.table}.items + excluded.items`
}

/**
 * The scalar total of a list scoped by `$1` (the count's scope) and `$2` (the organization): the
 * maintained counts when the query filters by nothing but `counts.filter` (the filter on the
 * counted column), else a count of the rows `from` and `conditions` select (their index serves it).
 */
export function listTotal(counts: CountTable, query: ListQuery, parameters: Parameters, from: string, conditions: readonly string[]): string {
  if (!Object.keys(query.values).every((filter) => filter === counts.filter)) return `select count(*) from ${from} where ${conditions.join(' and ')}`
  const keys = query.values[counts.filter]
  return `select coalesce(sum(c.items), 0) from ${counts.table} c where c.${counts.scope} = $1 and c.organization_id = $2${keys ? ` and c.${counts.key} = any(${parameters.bind(keys.anyOf, 'text[]')})` : ''}`
}
