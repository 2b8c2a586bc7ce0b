/**
 * Places the schema on a Citus cluster as the plugins' manifests declare (`placement`): every
 * table of the public schema is distributed by `organization_id` (all co-located) unless declared
 * a reference table (copied to every node) or a local one (left on the coordinator). Run by the
 * migrations, in their transaction, after the pending ones are applied; on plain PostgreSQL and
 * PGlite (no `citus` extension) it is one catalog query and nothing else.
 *
 * Citus refuses to distribute a table while a foreign key joins it to a table not placed yet
 * ("foreign keys from reference tables and local tables to distributed tables are not
 * supported"), and placing `organizations` first turns every table pointing at it into a Citus
 * local table. So the foreign keys that touch a table still to place are read
 * (`pg_get_constraintdef`), dropped, the tables placed, and the keys added back, all in the
 * caller's transaction. Citus needs that transaction in sequential mode: a key to a reference
 * table cannot follow parallel work on a distributed table in one transaction. Rows a table
 * already holds are copied to its shards.
 */
import { sql } from 'drizzle-orm'
import { queryRows, type Executor, type Transaction } from './db'
import type { AnyPlugin } from './plugin'

/** The column every distributed table is distributed by. */
export const DISTRIBUTION_COLUMN = 'organization_id'

export type TableKind = 'distributed' | 'reference' | 'local'

/** The tables declared not distributed, by name; any table not named is distributed by organization. */
export type TablePlacements = Readonly<Record<string, Exclude<TableKind, 'distributed'>>>

/** A table placed by `placeTables`. */
export interface PlacedTable {
  table: string
  kind: Exclude<TableKind, 'local'>
}

/** The placements the `plugins`' manifests declare. Pass every plugin whose tables the migrations create, enabled or not. */
export function declaredPlacements(plugins: readonly AnyPlugin[]): TablePlacements {
  const placements: Record<string, Exclude<TableKind, 'distributed'>> = {}
  for (const plugin of plugins) for (const [table, placement] of Object.entries(plugin.placement ?? {})) placements[table] = placement.kind
  return placements
}

/** Whether the database has the `citus` extension: one catalog query. */
export async function hasCitus(executor: Executor): Promise<boolean> {
  const [row] = await queryRows<{ citus: boolean }>(executor, sql`select exists (select 1 from pg_extension where extname = 'citus') as citus`)
  return Boolean(row?.citus)
}

/** Per database: whether it is a Citus coordinator, or the question in flight (asked once, whoever asks). */
const citusDatabases = new WeakMap<Executor, boolean | Promise<boolean>>()

/**
 * Whether `db` is a Citus coordinator: the answer once known, else the promise of it (asked once
 * per database; an error counts as Citus, the cautious answer for statements that must stay on
 * one shard). For the hot paths' grouped statements, which must know at once and cannot wait.
 */
export function citusKnown(db: Executor): boolean | Promise<boolean> {
  const known = citusDatabases.get(db)
  if (known !== undefined) return known
  const asked = hasCitus(db).catch(() => true)
  citusDatabases.set(db, asked)
  void asked.then((citus) => citusDatabases.set(db, citus))
  return asked
}

/**
 * Sets the transaction up for placing tables and changing placed ones: call it first in the
 * transaction, before any statement on a distributed table, and only when `hasCitus`.
 */
export async function prepareCitusTransaction(tx: Transaction): Promise<void> {
  const [node] = await queryRows<{ group: number }>(tx, sql`select groupid as "group" from pg_dist_local_group`)
  // A worker (group > 0) holds shards of the schema; the coordinator (group 0) owns it.
  if (node && Number(node.group) !== 0)
    throw new Error(`This database is a Citus worker (group ${node.group}): point DATABASE_URL at the coordinator, where the schema is migrated.`)
  await tx.execute(sql`set local citus.multi_shard_modify_mode to 'sequential'`)
}

interface TableRow {
  name: string
  /** pg_dist_partition's partmethod and repmodel, or null for a plain table. */
  method: string | null
  model: string | null
}

/** What Citus made of a table: distributed (hash), reference, Citus local (`citus_local`) or nothing yet (`plain`). */
function currentKind(row: TableRow): TableKind | 'citus_local' | 'plain' {
  if (row.method === null) return 'plain'
  if (row.method === 'h') return 'distributed'
  if (row.method === 'n' && row.model === 't') return 'reference'
  return 'citus_local'
}

/** Every table of the public schema with what Citus made of it (shards are hidden from pg_class). */
async function readTables(tx: Executor): Promise<TableRow[]> {
  return queryRows<TableRow>(
    tx,
    sql`select c.relname as name, p.partmethod::text as method, p.repmodel::text as model
          from pg_class c join pg_namespace n on n.oid = c.relnamespace
          left join pg_dist_partition p on p.logicalrelid = c.oid
         where n.nspname = 'public' and c.relkind in ('r', 'p') and not c.relispartition
         order by c.relname`,
  )
}

/**
 * Whether the public schema is placed already (a distributed or reference table in it). Then a
 * migration's new table is placed as soon as it is created, before the statements adding its
 * foreign keys: Citus refuses a key from a Citus local table to a distributed one, and a plain
 * table becomes Citus local the moment it gains a key to a reference table. On a fresh schema
 * the tables are placed once all migrations are applied (its history has states Citus refuses).
 */
export async function isSchemaPlaced(tx: Executor): Promise<boolean> {
  return (await readTables(tx)).some((table) => ['distributed', 'reference'].includes(currentKind(table)))
}

/**
 * Places every table of the public schema not placed yet as `placements` declares, in `tx`
 * (prepared with `prepareCitusTransaction`); returns the tables it placed (none when all are in
 * place: one catalog query). A table placed otherwise than declared is an error: changing a
 * placement takes an operator (`undistribute_table`, `alter_distributed_table`).
 */
export async function placeTables(tx: Transaction, placements: TablePlacements): Promise<PlacedTable[]> {
  const tables = await readTables(tx)
  const toPlace: PlacedTable[] = []
  const mismatches: string[] = []
  let colocateWith: string | undefined
  for (const table of tables) {
    const declared = (placements[table.name] as TableKind | undefined) ?? 'distributed'
    const current = currentKind(table)
    if (current === 'distributed' && declared === 'distributed') colocateWith ??= table.name
    if (current === declared || (declared === 'local' && (current === 'plain' || current === 'citus_local'))) continue
    if (declared !== 'local' && (current === 'plain' || current === 'citus_local')) toPlace.push({ table: table.name, kind: declared })
    else mismatches.push(`${table.name} is a ${current} table on Citus but its plugin declares it ${declared}`)
  }
  if (mismatches.length) throw new Error(`Tables placed otherwise than declared (change them by hand): ${mismatches.join('; ')}.`)
  if (!toPlace.length) return []

  // The foreign keys touching a table to place, as statements that add them back.
  const names = sql.join(
    toPlace.map((table) => sql`${table.table}`),
    sql`, `,
  )
  const keys = await queryRows<{ drop: string; add: string }>(
    tx,
    sql`select format('alter table %I.%I drop constraint %I', n.nspname, c.relname, k.conname) as drop,
               format('alter table %I.%I add constraint %I %s', n.nspname, c.relname, k.conname, pg_get_constraintdef(k.oid)) as add
          from pg_constraint k
          join pg_class c on c.oid = k.conrelid join pg_namespace n on n.oid = c.relnamespace
          join pg_class p on p.oid = k.confrelid join pg_namespace pn on pn.oid = p.relnamespace
         where k.contype = 'f' and ((n.nspname = 'public' and c.relname in (${names})) or (pn.nspname = 'public' and p.relname in (${names})))
         order by c.relname, k.conname`,
  )
  // Rows already there (a database moved from one server) are copied to the shards; the
  // coordinator's own copy is emptied afterwards, as Citus advises.
  const holdingRows: string[] = []
  for (const { table } of toPlace) {
    const [row] = await queryRows<{ rows: boolean }>(tx, sql`select exists (select 1 from only ${sql.identifier('public')}.${sql.identifier(table)}) as rows`)
    if (row?.rows) holdingRows.push(table)
  }
  for (const key of keys) await tx.execute(sql.raw(key.drop))
  for (const { table, kind } of toPlace.filter((table) => table.kind === 'reference')) await place(tx, table, kind)
  for (const { table, kind } of toPlace.filter((table) => table.kind === 'distributed')) {
    await place(tx, table, kind, colocateWith)
    colocateWith ??= table
  }
  for (const key of keys) await tx.execute(sql.raw(key.add))
  for (const table of holdingRows) await tx.execute(sql`select truncate_local_data_after_distributing_table(${relation(table)})`)
  return toPlace
}

/** One create_reference_table / create_distributed_table, its error naming the table. */
async function place(tx: Transaction, table: string, kind: PlacedTable['kind'], colocateWith?: string): Promise<void> {
  const statement =
    kind === 'reference'
      ? sql`select create_reference_table(${relation(table)})`
      : sql`select create_distributed_table(${relation(table)}, ${DISTRIBUTION_COLUMN}, colocate_with => ${colocateWith ? qualifiedName(colocateWith) : 'none'})`
  try {
    await tx.execute(statement)
  } catch (error) {
    const reason = (error as { cause?: { message?: string } }).cause?.message ?? (error as Error).message
    throw Object.assign(new Error(`Citus refused to make ${table} a ${kind} table: ${reason}`), { cause: error })
  }
}

/** `public."table"`, as Citus's functions take a table's name. */
const qualifiedName = (table: string) => `public."${table.replaceAll('"', '""')}"`
const relation = (table: string) => sql`${qualifiedName(table)}::regclass`

/** How each table of the public schema is placed on Citus (`local`: a plain or Citus local table), or undefined without Citus. */
export async function readPlacement(executor: Executor): Promise<Record<string, TableKind> | undefined> {
  if (!(await hasCitus(executor))) return undefined
  const placement: Record<string, TableKind> = {}
  for (const table of await readTables(executor)) {
    const kind = currentKind(table)
    placement[table.name] = kind === 'plain' || kind === 'citus_local' ? 'local' : kind
  }
  return placement
}
