/**
 * Project search over the read models the searched plugins export (work_item_documents,
 * entry_documents, relationship_links): PostgreSQL full-text search on generated tsvector columns (GIN indexes), every
 * word matched as a prefix (`auth` finds "authentication"); when the words find fewer than
 * `limit`, a substring fallback on work item titles and entry bodies through trigram indexes for
 * terms of three characters or more ("ntica" finds "authentication"). Ranked by ts_rank (title weighs A, description and bodies
 * B) plus a smaller bonus for a substring hit; ties by creation. The 'simple' configuration (no
 * language stemming) and the same extension on both make PGlite and PostgreSQL agree.
 * Each kind ranks a bounded window of matches, so a broad term in a huge project costs a bounded
 * amount of work: the matches among the project's most recent rows when they hold a page of them
 * (a broad term), else the first RANKING_WINDOW the index yields (a narrow one, which the index
 * finds cheaply); the substring fallback adds no more than the page has room for.
 */
import { queryText, type Database } from '../../src/db'
import type { ProjectAccessService } from '../projects/api'
import type { Actor } from '../../src/services/identity'
import { projectSummary } from './summary'
import { ENTRY_COLUMNS, fromEntryText, type EntryTextRow } from '../entries/api'
import { fromRelationshipText, RELATIONSHIP_COLUMNS, type RelationshipTextRow } from '../relationships/api'
import { fromWorkItemText, WORK_ITEM_COLUMNS, WORK_ITEM_LIST, type WorkItemTextRow } from '../work-items/api'
import { filterParameters, Parameters, parseListQuery, type ListShape } from '../../src/http/list-query'

const SUBSTRING_MIN = 3

/** Each word of the query (lower case, at most 16, each once) as a prefix tsquery: `auth:*`. */
function wordQueries(q: string): string[] {
  return [...new Set((q.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, 16))].map((word) => `${word}:*`)
}

/** Words of the query as a prefix tsquery (`auth:* & flow:*`); empty when it has no words. */
export function prefixQuery(q: string): string {
  return wordQueries(q).join(' & ')
}

/** `%q%` for ILIKE, with the pattern characters escaped; null when the term is too short. */
export function substringPattern(q: string): string | null {
  const term = q.trim()
  if ([...term].length < SUBSTRING_MIN) return null
  return `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}

/**
 * Ranking looks at no more than this many matches of each kind and match path: it bounds a
 * search's cost on a broad term in a large project.
 */
const RANKING_WINDOW = 200

/**
 * How many of the project's most recent rows are read first. A term that fills a page among them
 * is broad: its matches there are the ones ranked, at the cost of reading these rows and no index
 * (an index lists every match of a broad term, tens of thousands in a large project). A term that
 * does not is narrow (under limit/RECENT_ROWS of the rows), and the index finds it cheaply.
 */
const RECENT_ROWS = 1000

/**
 * For a narrow query of several words, the index is asked only for the words that matched at most
 * BROADER times as often as the narrowest one among the SAMPLE_ROWS most recent rows: a word far
 * broader than another costs the index more (every one of its matches listed) than checking it on
 * the rows the narrower words find. The substring fallback looks among as many recent rows first
 * (ILIKE on a long text costs microseconds a row).
 */
const SAMPLE_ROWS = 300
const BROADER = 10

interface Kind {
  /** The read model. */
  table: string
  /** Its columns the filters read (besides id, created_at, search_vector and `column`). */
  filtered: string
  /** The filters of the search on a row `t` of it ($8 statuses, $9 assignee: an id or `none`; null: any). */
  filter: string
  /** The text the substring fallback looks in. */
  column: string
  /** Added to the rank when the substring matches that text. */
  bonus: number
  /** The project's most recent rows first, in the order of an index that starts with project_id. */
  recency: string
}

const WORK_ITEM_KIND: Kind = {
  table: 'work_item_documents',
  filtered: ', status, assignee_id',
  filter: `($8::text[] is null or t.status = any($8::text[])) and ($9::text is null or case when $9::text = 'none' then t.assignee_id is null else t.assignee_id::text = $9::text end)`,
  column: 'title',
  bonus: 0.2,
  recency: 'updated_at desc nulls last, id desc nulls last',
}
// Entries are not filtered by their work item's fields; $8 and $9 are named so every statement types them.
const ENTRY_KIND: Kind = { table: 'entry_documents', filtered: '', filter: '($8::text[] is null or true) and ($9::text is null or true)', column: 'body', bonus: 0.1, recency: 'created_at desc nulls last, id desc nulls last' }

/** A row's relevance: its rank for the words plus the kind's bonus when the substring matches. */
const score = (kind: Kind) =>
  `ts_rank(t.search_vector, (select q from query)) + case when $3::text is not null and t.${kind.column} ilike $3 then ${kind.bonus} else 0 end`

/** The project's `rows` most recent rows, with what matching and ranking read. */
const recent = (kind: Kind, rows = RECENT_ROWS) =>
  `(select id, created_at, search_vector, ${kind.column}${kind.filtered} from ${kind.table} where project_id = $1 and organization_id = $7 order by ${kind.recency} limit ${rows})`

/**
 * The ranked matches of a kind (`matches`: id, created_at, score), scored in the scan that finds
 * them. Word (prefix) matches first: among the recent rows when they hold a page of them, else
 * through the index, asked for every word but those far broader than the narrowest (checked on
 * the rows the others find instead: one broad word does not make a narrow pair costly).
 * Substring matches only when the words found fewer than `limit` (the fallback for partial terms),
 * as many as the page has room for: among the recent rows when they hold that many, else through
 * the trigram index — for a term without spaces; a phrase of several words is looked for among the
 * recent rows only (its words already matched as prefixes everywhere, and the trigram index reads
 * the posting lists of every trigram of the phrase: tens of milliseconds in a large project). A row found
 * both ways has the same score both times, so the union keeps it once. `only` guards the whole.
 * $1 project, $2 tsquery text, $3 substring pattern (or null), $4 limit, $5 each word's tsquery text,
 * $6 whether the substring may be looked for through the trigram index (a term without spaces),
 * $7 the organization (named wherever a table is read: on Citus, one shard answers), $8 and $9
 * the filters (`Kind.filter`).
 */
const matches = (kind: Kind, only = 'true') => `
  query as materialized (select to_tsquery('simple', $2) as q),
  recent_words as materialized (
    select t.id, t.created_at, ${score(kind)} as score from ${recent(kind)} t
    where ${only} and ${kind.filter} and t.search_vector @@ (select q from query) limit ${RANKING_WINDOW}
  ),
  indexed as materialized (
    select case when cardinality($5::text[]) < 2 then (select q from query) else (
      select to_tsquery('simple', string_agg(c.word, ' & ')) from (
        select w.word, count(r.id) as n, min(count(r.id)) over () as least from unnest($5::text[]) as w(word)
          left join ${recent(kind, SAMPLE_ROWS)} r on r.search_vector @@ to_tsquery('simple', w.word)
          group by w.word
      ) c where c.n <= ${BROADER} * (c.least + 1)) end as q
  ),
  words as materialized (
    select id, created_at, score from recent_words where (select count(*) from recent_words) >= $4
    union all
    (select t.id, t.created_at, ${score(kind)} from ${kind.table} t
      where (select count(*) from recent_words) < $4 and ${only} and t.project_id = $1 and t.organization_id = $7 and ${kind.filter}
        and t.search_vector @@ (select q from indexed) and ts_match_vq(t.search_vector, (select q from query))
      limit ${RANKING_WINDOW})
  ),
  recent_substrings as materialized (
    select t.id, t.created_at, ${score(kind)} as score from ${recent(kind, SAMPLE_ROWS)} t where t.${kind.column} ilike $3 and ${kind.filter}
  ),
  substrings as (
    select id, created_at, score from recent_substrings where (select count(*) from recent_substrings) >= $4 - (select count(*) from words)
    union all
    (select t.id, t.created_at, ${score(kind)} from ${kind.table} t
      where $6 and (select count(*) from recent_substrings) < $4 - (select count(*) from words) and t.project_id = $1 and t.organization_id = $7 and t.${kind.column} ilike $3
        and ${kind.filter}
      limit (select $4 - count(*) from words))
  ),
  matches as (
    select id, created_at, score from words
    union
    select id, created_at, score from substrings where ${only} and $3::text is not null and (select count(*) from words) < $4
  )`

/** The best `limit` matches, then only their rows read in full. */
const best = (kind: Kind, alias: string, columns: string) => `with ${matches(kind)},
  best as (select id, created_at, score from matches order by score desc, created_at, id limit $4)
  select ${columns} from best b join ${kind.table} ${alias} on ${alias}.id = b.id and ${alias}.organization_id = $7 order by b.score desc, b.created_at, b.id`

const WORK_ITEMS = best(WORK_ITEM_KIND, 'w', WORK_ITEM_COLUMNS)

const ENTRIES = best(ENTRY_KIND, 'e', ENTRY_COLUMNS)

/**
 * A relationship matches when either end matches; it ranks by its better end. The ends are looked
 * up by index from the matched work items (two joins, not one `or`), and a project without
 * relationships ranks no work items for them at all.
 */
const RELATIONSHIPS = `with ${matches(WORK_ITEM_KIND, 'exists (select 1 from relationship_links where project_id = $1 and organization_id = $7)')},
  ends as (
    select r.id, m.score from relationship_links r join matches m on m.id = r.source_work_item_id where r.project_id = $1 and r.organization_id = $7
    union all
    select r.id, m.score from relationship_links r join matches m on m.id = r.target_work_item_id where r.project_id = $1 and r.organization_id = $7
  ),
  best as (select id, max(score) as score from ends group by id)
  select ${RELATIONSHIP_COLUMNS} from best b join relationship_links r on r.id = b.id and r.organization_id = $7 order by b.score desc, r.created_at, r.id limit $4`

interface SearchOptions {
  q: string
  limit: number
  /** Work items in any of these statuses (null: any). */
  statuses?: string[] | null
  /** Work items assigned to this user, or `none` for unassigned (null: any). */
  assignee?: string | null
}

/** The search's filters, in the list grammar: `status` any of, `assigneeId` an id or `none`. */
export const SEARCH_FILTERS: ListShape = {
  name: 'search',
  filters: {
    status: { ...WORK_ITEM_LIST.filters.status!, description: 'Only work items (and relationships through a matching end) in these statuses; entries are not filtered.' },
    assigneeId: { ...WORK_ITEM_LIST.filters.assigneeId!, description: 'Only work items (and relationships through a matching end) assigned to this user (`none`: unassigned).' },
  },
  sorts: {},
  defaultOrder: [],
  tiebreaker: WORK_ITEM_LIST.tiebreaker,
}

/** The query parameters (and MCP arguments) of the search's filters. */
export function searchFilterParameters() {
  const { sort: _sort, ...filters } = filterParameters(SEARCH_FILTERS)
  return filters
}

/** The search options of a request's `q`, `limit` and filters (400 naming a bad filter or an unknown key). */
export function searchOptions(input: Record<string, unknown>): SearchOptions {
  const { q, limit, ...filters } = input as { q: string; limit?: number }
  const { values } = parseListQuery(SEARCH_FILTERS, filters, new Parameters(), ['projectId'])
  const assignee = values.assigneeId?.anyOf[0]
  return { q, limit: limit ?? 20, statuses: (values.status?.anyOf as string[] | undefined) ?? null, assignee: assignee === undefined ? null : (assignee ?? 'none') }
}

/** Work items, entries and relationships of the project matching `q`, best first, `limit` each. */
export async function searchProject(db: Database, access: ProjectAccessService, actor: Actor, projectId: string, options: SearchOptions) {
  await access.requireProjectAccess(actor, projectId, 'viewer')
  const words = wordQueries(options.q)
  const parameters = [projectId, words.join(' & '), substringPattern(options.q), options.limit, words, !/\s/.test(options.q.trim()), actor.organizationId, options.statuses ?? null, options.assignee ?? null]
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
