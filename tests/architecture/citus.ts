/**
 * What the live schema says about distributing it by `organization_id` on Citus: the facts read
 * from the catalog, the rules a distributed, reference or local table must meet, the statements
 * that distribute it (docs/scaling.md prints them as a reference: the migrations
 * place the tables themselves, src/citus.ts).
 */
import { DISTRIBUTION_COLUMN } from '../../src/citus'
import { queryText, type Executor } from '../../src/db'

export type Placement = 'distributed' | 'reference' | 'local'

export interface TableFacts {
  name: string
  /** Has a NOT NULL organization_id column. */
  tenantColumn: boolean
  primaryKey: string[] | null
  /** Unique indexes other than the primary key: their plain columns (expressions left out). */
  uniques: { name: string; columns: string[] }[]
  foreignKeys: { name: string; parent: string; pairs: [string, string][] }[]
}

export { DISTRIBUTION_COLUMN }

/** Every table of the public schema with its keys. */
export async function readSchema(executor: Executor): Promise<TableFacts[]> {
  const tables = await queryText<{ name: string; tenantColumn: boolean }>(
    executor,
    `select c.relname as name,
            exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = '${DISTRIBUTION_COLUMN}' and a.attnotnull and not a.attisdropped) as "tenantColumn"
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'public' and c.relkind in ('r', 'p') order by 1`,
    [],
  )
  const indexes = await queryText<{ table: string; name: string; primary: boolean; columns: string[] | string }>(
    executor,
    `select t.relname as table, i.relname as name, x.indisprimary as primary,
            array(select a.attname::text from unnest(x.indkey) k join pg_attribute a on a.attrelid = t.oid and a.attnum = k where k > 0) as columns
       from pg_index x join pg_class i on i.oid = x.indexrelid join pg_class t on t.oid = x.indrelid join pg_namespace n on n.oid = t.relnamespace
      where n.nspname = 'public' and x.indisunique`,
    [],
  )
  const keys = await queryText<{ table: string; name: string; parent: string; pairs: string }>(
    executor,
    `select c.relname as table, k.conname as name, p.relname as parent,
            (select json_agg(json_build_array(ca.attname, pa.attname) order by u.i)
               from unnest(k.conkey, k.confkey) with ordinality as u(child, parent, i)
               join pg_attribute ca on ca.attrelid = k.conrelid and ca.attnum = u.child
               join pg_attribute pa on pa.attrelid = k.confrelid and pa.attnum = u.parent)::text as pairs
       from pg_constraint k join pg_class c on c.oid = k.conrelid join pg_class p on p.oid = k.confrelid join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'public' and k.contype = 'f' order by 1, 2`,
    [],
  )
  const list = (value: string[] | string) => (Array.isArray(value) ? value : value.replace(/^\{|\}$/g, '').split(',').filter(Boolean))
  return tables.map((table) => ({
    ...table,
    primaryKey: indexes.filter((index) => index.table === table.name && index.primary).map((index) => list(index.columns))[0] ?? null,
    uniques: indexes.filter((index) => index.table === table.name && !index.primary).map((index) => ({ name: index.name, columns: list(index.columns) })),
    foreignKeys: keys.filter((key) => key.table === table.name).map((key) => ({ name: key.name, parent: key.parent, pairs: JSON.parse(key.pairs) })),
  }))
}

/**
 * What keeps a table from its placement on Citus. A distributed table carries organization_id in
 * its primary key and every unique index, and each foreign key either pairs organization_id with
 * organization_id (a co-located parent) or points at a reference table. A reference or local
 * table points at reference tables only, and nothing distributed points at a local table.
 */
export function placementProblems(tables: readonly TableFacts[], placementOf: (table: string) => Placement): string[] {
  const problems: string[] = []
  for (const table of tables) {
    const placement = placementOf(table.name)
    if (placement === 'distributed') {
      if (!table.tenantColumn) problems.push(`${table.name}: no NOT NULL ${DISTRIBUTION_COLUMN} to distribute by`)
      if (!table.primaryKey) problems.push(`${table.name}: no primary key`)
      else if (!table.primaryKey.includes(DISTRIBUTION_COLUMN)) problems.push(`${table.name}: primary key (${table.primaryKey.join(', ')}) lacks ${DISTRIBUTION_COLUMN}`)
      for (const unique of table.uniques)
        if (!unique.columns.includes(DISTRIBUTION_COLUMN)) problems.push(`${table.name}: unique index ${unique.name} lacks ${DISTRIBUTION_COLUMN}`)
    }
    for (const key of table.foreignKeys) {
      const parent = placementOf(key.parent)
      if (parent === 'reference') continue
      if (placement !== 'distributed') problems.push(`${table.name}: foreign key ${key.name} from a ${placement} table to the ${parent} table ${key.parent}`)
      else if (parent !== 'distributed') problems.push(`${table.name}: foreign key ${key.name} to the ${parent} table ${key.parent}`)
      else if (!key.pairs.some(([child, parentColumn]) => child === DISTRIBUTION_COLUMN && parentColumn === DISTRIBUTION_COLUMN))
        problems.push(`${table.name}: foreign key ${key.name} to ${key.parent} does not pair ${DISTRIBUTION_COLUMN} with ${DISTRIBUTION_COLUMN}`)
    }
  }
  return problems
}

/**
 * The statements that distribute the schema: reference tables first, then the distributed ones,
 * parents before children (Citus needs a foreign key's parent in place first), all co-located
 * with the first.
 */
export function citusStatements(tables: readonly TableFacts[], placementOf: (table: string) => Placement): string[] {
  const byName = new Map(tables.map((table) => [table.name, table]))
  const ordered: string[] = []
  const seen = new Set<string>()
  const visit = (name: string) => {
    if (seen.has(name)) return
    seen.add(name)
    for (const key of byName.get(name)!.foreignKeys) visit(key.parent)
    ordered.push(name)
  }
  for (const table of [...tables].sort((a, b) => a.name.localeCompare(b.name))) visit(table.name)
  const statements: string[] = []
  for (const name of ordered.filter((table) => placementOf(table) === 'reference')) statements.push(`select create_reference_table('${name}');`)
  let first: string | undefined
  for (const name of ordered.filter((table) => placementOf(table) === 'distributed')) {
    statements.push(first ? `select create_distributed_table('${name}', '${DISTRIBUTION_COLUMN}', colocate_with => '${first}');` : `select create_distributed_table('${name}', '${DISTRIBUTION_COLUMN}');`)
    first ??= name
  }
  for (const name of ordered.filter((table) => placementOf(table) === 'local')) statements.push(`-- ${name} stays a plain table on the coordinator`)
  return statements
}
