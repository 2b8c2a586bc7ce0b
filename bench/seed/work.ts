/**
 * Bulk seeding of work items and entries (a million rows in minutes, not hours), in one of the two
 * corpora of bench/seed/corpus.ts: the synthetic one in SQL, from a fixed vocabulary of 2,000 made-up
 * words (each word lands in ~0.2 % of titles), the realistic one generated here (deterministic
 * English text) and inserted in batches of arrays; and the requests the benchmarks send to it.
 */
import { sql } from 'drizzle-orm'
import { queryRows, queryText, type Database } from '../../src/db'
import { luaValue } from '../lib/wrk'
import { randomSource, realisticBody, realisticTitle, VOCABULARY } from './corpus'

export interface SeedTarget {
  organizationId: string
  projectId: string
  userId: string
}

interface SeedCounts {
  workItems: number
  entries: number
}

/**
 * The creation time of row `done + g` of `total` (g: the batch's generate_series or ordinality):
 * one second apart, the last one now, so the rows have a history in the order they were added.
 */
const history = (total: number, done: number, g = 'g') => `now() - make_interval(secs => ${total} - (${done} + ${g}))`

/** Adds `counts` rows to the project, in batches, numbering work items from where they are, then recounts the project (`recount`). */
export async function seedWork(db: Database, target: SeedTarget, counts: SeedCounts): Promise<void> {
  const words = sql.raw(`array[${VOCABULARY.map((word) => `'${word}'`).join(',')}]`)
  const phrase = (length: number) =>
    // `0 * g` ties the subquery to each row (every row draws its own words); `0 * s.i` keeps the
    // aggregate at the subquery's level.
    sql.raw(`(select string_agg(w[1 + floor(random() * ${VOCABULARY.length})::int + 0 * s.i], ' ') from generate_series(1, ${length} + 0 * g) as s(i))`)
  const batch = 50_000
  for (let done = 0; done < counts.workItems; done += batch) {
    const n = Math.min(batch, counts.workItems - done)
    await db.execute(sql`
      with w as (select ${words} as w)
      insert into work_items (id, organization_id, project_id, number, title, description, status, priority, position, created_by, created_at, updated_at)
      select gen_random_uuid(), ${target.organizationId}, ${target.projectId}, ${done} + g, ${phrase(4)}, ${phrase(12)},
        (array['todo','in_progress','done','cancelled'])[1 + g % 4], g % 5, ${done} + g - 1, ${target.userId}, ${sql.raw(history(counts.workItems, done))}, ${sql.raw(history(counts.workItems, done))}
      from generate_series(1, ${n}) as g, w`)
  }
  await setLastNumber(db, target, counts.workItems)
  for (let done = 0; done < counts.entries; done += batch) {
    const n = Math.min(batch, counts.entries - done)
    await db.execute(sql`
      with w as (select ${words} as w), items as (select id, row_number() over (order by number) as r from work_items where project_id = ${target.projectId})
      insert into entries (id, organization_id, project_id, work_item_id, kind, body, author_id, position, created_at, updated_at)
      select gen_random_uuid(), ${target.organizationId}, ${target.projectId}, items.id, 'comment', ${phrase(15)}, ${target.userId}, g, ${sql.raw(history(counts.entries, done))}, ${sql.raw(history(counts.entries, done))}
      from generate_series(1, ${n}) as g, w, items where items.r = 1 + (${done} + g) % ${counts.workItems}`)
  }
  await recount(db, target)
  await db.execute(sql`analyze work_items`)
  await db.execute(sql`analyze entries`)
}

/**
 * The project's maintained counts (work_item_counts per status, entry_counts per work item and
 * kind), recomputed from its rows: the seeding inserts by SQL, past the services that move them in
 * each writing transaction, so without this a list's `totalItems` would not be the rows it has.
 * Seeding only adds rows, so every count it could have changed is among those recomputed.
 */
export async function recount(db: Database, target: SeedTarget): Promise<void> {
  await db.execute(sql`insert into work_item_counts (project_id, status, organization_id, items)
    select project_id, status, organization_id, count(*) from work_items where project_id = ${target.projectId} and organization_id = ${target.organizationId}
    group by project_id, status, organization_id
    on conflict (project_id, status, organization_id) do update set items = excluded.items`)
  await db.execute(sql`insert into entry_counts (work_item_id, kind, organization_id, items)
    select work_item_id, kind, organization_id, count(*) from entries where project_id = ${target.projectId} and organization_id = ${target.organizationId}
    group by work_item_id, kind, organization_id
    on conflict (work_item_id, kind, organization_id) do update set items = excluded.items`)
}

async function setLastNumber(db: Database, target: SeedTarget, lastNumber: number): Promise<void> {
  await db.execute(sql`insert into work_item_counters (project_id, organization_id, last_number) values (${target.projectId}, ${target.organizationId}, ${lastNumber})
    on conflict (project_id, organization_id) do update set last_number = excluded.last_number`)
}

/**
 * Adds `counts` rows of realistic English (bench/seed/corpus.ts) to an empty project: the same text on
 * every run. Entries go round-robin to the work items, as in seedWork; the project is recounted (`recount`).
 */
export async function seedRealisticWork(db: Database, target: SeedTarget, counts: SeedCounts): Promise<void> {
  const random = randomSource(7)
  const batch = 10_000
  const itemIds: string[] = []
  for (let done = 0; done < counts.workItems; done += batch) {
    const n = Math.min(batch, counts.workItems - done)
    const ids = Array.from({ length: n }, () => crypto.randomUUID())
    const titles = Array.from({ length: n }, () => realisticTitle(random))
    const descriptions = Array.from({ length: n }, () => realisticBody(random))
    itemIds.push(...ids)
    await queryText(
      db,
      `insert into work_items (id, organization_id, project_id, number, title, description, status, priority, position, created_by, created_at, updated_at)
      select i.id, $1, $2, $3 + i.g, i.title, i.description, (array['todo','in_progress','done','cancelled'])[1 + i.g % 4], i.g % 5, $3 + i.g - 1, $4,
        ${history(counts.workItems, done, 'i.g')}, ${history(counts.workItems, done, 'i.g')}
      from unnest($5::uuid[], $6::text[], $7::text[]) with ordinality as i(id, title, description, g)`,
      [target.organizationId, target.projectId, done, target.userId, ids, titles, descriptions],
    )
  }
  await setLastNumber(db, target, counts.workItems)
  for (let done = 0; done < counts.entries; done += batch) {
    const n = Math.min(batch, counts.entries - done)
    const workItemIds = Array.from({ length: n }, (_, i) => itemIds[(done + i + 1) % itemIds.length]!)
    const bodies = Array.from({ length: n }, () => realisticBody(random))
    await queryText(
      db,
      `insert into entries (id, organization_id, project_id, work_item_id, kind, body, author_id, position, created_at, updated_at)
      select gen_random_uuid(), $1, $2, e.work_item_id, 'comment', e.body, $3, $4 + e.g, ${history(counts.entries, done, 'e.g')}, ${history(counts.entries, done, 'e.g')}
      from unnest($5::uuid[], $6::text[]) with ordinality as e(work_item_id, body, g)`,
      [target.organizationId, target.projectId, target.userId, done, workItemIds, bodies],
    )
  }
  await recount(db, target)
  await db.execute(sql`analyze work_items`)
  await db.execute(sql`analyze entries`)
}

/**
 * Runs a bulk `load` with the text (GIN) indexes of work_items and entries dropped, then builds
 * them again: one index build is many times faster than a million index insertions. Only for a
 * database no service is using yet.
 */
export async function withoutTextIndexes(db: Database, load: () => Promise<void>): Promise<void> {
  const indexes = await queryRows<{ name: string; definition: string }>(
    db,
    sql`select indexname as name, indexdef as definition from pg_indexes where schemaname = 'public' and tablename in ('work_items', 'entries') and indexdef like '% USING gin %'`,
  )
  for (const index of indexes) await db.execute(sql.raw(`drop index "${index.name}"`))
  await load()
  await db.transaction(async (tx) => {
    await tx.execute(sql`set local maintenance_work_mem = '512MB'`)
    for (const index of indexes) await tx.execute(sql.raw(index.definition))
  })
}

/**
 * wrk Lua for repeated reads of a list: every tenth request renames one of the listed work items
 * (a title never used before, so each is a change), the other nine read the list page.
 */
export function repeatedReads(listPath: string, itemPaths: string[], secret: string): string {
  const headers = { authorization: `Bearer ${secret}` }
  const tag = Math.random().toString(36).slice(2, 8)
  return `local items = ${luaValue(itemPaths)}
local read, writeHeaders, n
function init(args)
  read = wrk.format("GET", ${luaValue(listPath)}, ${luaValue(headers)})
  writeHeaders = ${luaValue({ ...headers, 'content-type': 'application/json' })}
  n = 0
end
function request()
  n = n + 1
  if n % 10 ~= 0 then return read end
  return wrk.format("PATCH", items[(n / 10) % #items + 1], writeHeaders, '{"title":"Renamed ${tag} ' .. n .. '"}')
end`
}

/** The ids of the project's first `count` work items, by number. */
export async function firstItems(db: Database, projectId: string, count = 100): Promise<string[]> {
  const rows = await queryText<{ id: string }>(db, 'select id from work_items where project_id = $1 order by number limit $2', [projectId, count])
  return rows.map((row) => row.id)
}
