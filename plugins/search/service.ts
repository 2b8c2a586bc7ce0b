/**
 * Project search over the read models the searched plugins export (work_item_documents,
 * entry_documents, relationship_links): PostgreSQL full-text search on generated tsvector columns (GIN indexes), every
 * word matched as a prefix (`auth` finds "authentication"); when the words find fewer than
 * `limit`, a substring fallback on work item titles and entry bodies through trigram indexes for
 * terms of three characters or more ("ntica" finds "authentication"). Ranked by ts_rank (title weighs A, description and bodies
 * B) plus a smaller bonus for a substring hit; ties by creation. The 'simple' configuration (no
 * language stemming) and the same extension on both make PGlite and PostgreSQL agree.
 * Each kind ranks at most RANKING_WINDOW matches per match path, so a broad term in a huge
 * project costs a bounded amount of work.
 */
import { queryText, type Database } from '../../src/db'
import type { ProjectAccessService } from '../projects/api'
import type { Actor } from '../../src/services/identity'
import { projectSummary } from './summary'
import { ENTRY_COLUMNS, fromEntryText, type EntryTextRow } from '../entries/api'
import { fromRelationshipText, RELATIONSHIP_COLUMNS, type RelationshipTextRow } from '../relationships/api'
import { fromWorkItemText, WORK_ITEM_COLUMNS, type WorkItemTextRow } from '../work-items/api'

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

/**
 * Ranking looks at no more than this many matches of each kind (the first ones the index
 * yields): it bounds a search's cost on a broad term in a large project.
 */
const RANKING_WINDOW = 500

/**
 * Candidate ids of a kind: word (prefix) matches first; substring matches only when the words
 * found fewer than `limit` (the fallback for partial terms), so a common word costs one index.
 * $1 project, $2 tsquery text, $3 substring pattern (or null), $4 limit.
 */
const candidates = (table: string, column: string) => `
  words as materialized (
    select t.id from ${table} t where t.project_id = $1 and t.search_vector @@ to_tsquery('simple', $2) limit ${RANKING_WINDOW}
  ),
  candidates as (
    select id from words
    union
    (select t.id from ${table} t
      where $3::text is not null and (select count(*) from words) < $4 and t.project_id = $1 and t.${column} ilike $3
      limit ${RANKING_WINDOW})
  )`

const scored = (table: string, column: string, bonus: number) => `
  select t.*, ts_rank(t.search_vector, to_tsquery('simple', $2)) + case when $3::text is not null and t.${column} ilike $3 then ${bonus} else 0 end as score
  from ${table} t join candidates c on c.id = t.id`

const WORK_ITEMS = `with ${candidates('work_item_documents', 'title')}
  select ${WORK_ITEM_COLUMNS} from (${scored('work_item_documents', 'title', 0.2)}) w order by w.score desc, w.created_at, w.id limit $4`

const ENTRIES = `with ${candidates('entry_documents', 'body')}
  select ${ENTRY_COLUMNS} from (${scored('entry_documents', 'body', 0.1)}) e order by e.score desc, e.created_at, e.id limit $4`

/** A relationship matches when either end matches; it ranks by its better end. */
const RELATIONSHIPS = `with ${candidates('work_item_documents', 'title')}, matched as (${scored('work_item_documents', 'title', 0.2)})
  select ${RELATIONSHIP_COLUMNS} from (
    select r.*, max(m.score) as score from relationship_links r
      join matched m on m.id = r.source_work_item_id or m.id = r.target_work_item_id
      where r.project_id = $1
      group by r.id, r.organization_id, r.project_id, r.source_work_item_id, r.target_work_item_id, r.type, r.created_by, r.created_at, r.updated_at
  ) r order by r.score desc, r.created_at, r.id limit $4`

interface SearchOptions {
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

/** Search and the project summary, bound once. */
export function createSearch({ db, access }: { db: Database; access: ProjectAccessService }) {
  return {
    search: (actor: Actor, projectId: string, options: SearchOptions) => searchProject(db, access, actor, projectId, options),
    summary: (actor: Actor, projectId: string) => projectSummary(db, access, actor, projectId),
  }
}

export type SearchService = ReturnType<typeof createSearch>
