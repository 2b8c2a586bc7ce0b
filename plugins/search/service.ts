/**
 * Project search: PostgreSQL full-text search on generated tsvector columns (GIN indexes), every
 * word matched as a prefix (`auth` finds "authentication"), plus a substring fallback on work
 * item titles and entry bodies through trigram indexes for terms of three characters or more
 * ("ntica" finds "authentication"). Ranked by ts_rank (title weighs A, description and bodies
 * B) plus a smaller bonus for a substring hit; ties by creation. The 'simple' configuration (no
 * language stemming) and the same extension on both make PGlite and PostgreSQL agree.
 */
import { queryText, type Database } from '../../src/db'
import type { ProjectAccessService } from '../../src/services/access'
import type { Actor } from '../../src/services/auth'
import { ENTRY_COLUMNS, fromEntryText, type EntryTextRow } from '../entries/model'
import { fromRelationshipText, RELATIONSHIP_COLUMNS, type RelationshipTextRow } from '../relationships/model'
import { fromWorkItemText, WORK_ITEM_COLUMNS, type WorkItemTextRow } from '../work-items/model'

const SUBSTRING_MIN = 3

/** Words of the query as a prefix tsquery (`auth:* & flow:*`); empty when it has no words. */
export function prefixQuery(q: string): string {
  const words = new Set((q.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, 16))
  return [...words].map((word) => `${word}:*`).join(' & ')
}

/** `%q%` for ILIKE, with the pattern characters escaped; null when the term is too short. */
export function substringPattern(q: string): string | null {
  const term = q.trim()
  if ([...term].length < SUBSTRING_MIN) return null
  return `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}

// $1 project, $2 tsquery text, $3 substring pattern (or null), $4 limit.
const MATCHED_WORK_ITEMS = `
  select w.*, ts_rank(w.search_vector, query) + case when $3::text is not null and w.title ilike $3 then 0.2 else 0 end as score
  from work_items w, to_tsquery('simple', $2) query
  where w.project_id = $1 and (w.search_vector @@ query or ($3::text is not null and w.title ilike $3))`

const WORK_ITEMS = `select ${WORK_ITEM_COLUMNS} from (${MATCHED_WORK_ITEMS}) w order by w.score desc, w.created_at, w.id limit $4`

const ENTRIES = `select ${ENTRY_COLUMNS} from (
    select e.*, ts_rank(e.search_vector, query) + case when $3::text is not null and e.body ilike $3 then 0.1 else 0 end as score
    from entries e, to_tsquery('simple', $2) query
    where e.project_id = $1 and (e.search_vector @@ query or ($3::text is not null and e.body ilike $3))
  ) e order by e.score desc, e.created_at, e.id limit $4`

/** A relationship matches when either end matches; it ranks by its better end. */
const RELATIONSHIPS = `with matched as (${MATCHED_WORK_ITEMS})
  select ${RELATIONSHIP_COLUMNS} from (
    select r.*, max(m.score) as score from relationships r
      join matched m on m.id = r.source_work_item_id or m.id = r.target_work_item_id
      where r.project_id = $1
      group by r.id
  ) r order by r.score desc, r.created_at, r.id limit $4`

export interface SearchOptions {
  q: string
  limit: number
}

/** Work items, entries and relationships of the project matching `q`, best first, `limit` each. */
export async function searchProject(db: Database, access: ProjectAccessService, actor: Actor, projectId: string, options: SearchOptions) {
  await access.requireProjectAccess(actor, projectId, 'viewer')
  const parameters = [projectId, prefixQuery(options.q), substringPattern(options.q), options.limit]
  const [workItems, entries, relationships] = await Promise.all([
    queryText<WorkItemTextRow>(db, WORK_ITEMS, parameters),
    queryText<EntryTextRow>(db, ENTRIES, parameters),
    queryText<RelationshipTextRow>(db, RELATIONSHIPS, parameters),
  ])
  return {
    workItems: workItems.map(fromWorkItemText),
    entries: entries.map(fromEntryText),
    relationships: relationships.map(fromRelationshipText),
  }
}
