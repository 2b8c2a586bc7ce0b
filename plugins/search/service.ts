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
 * finds cheaply); the substring fallback adds no more than the page has room for. A query that is
 * a work item key of the project (`ENG-123`, any case, an old project key too) finds that work
 * item first, whatever its text (one probe of the key directory and the project's numbers).
 */
import { sql, type SQL } from 'drizzle-orm'
import type { Database } from '../../src/db'
import { compileStatement, runStatement } from '../../src/statements'
import type { ProjectAccessService } from '../projects/api'
import type { Actor } from '../../src/services/identity'
import { projectSummary } from './summary'
import { ENTRY_COLUMNS, toEntry, type EntryTextRow } from '../entries/api'
import { RELATIONSHIP_COLUMNS, toRelationship, type RelationshipTextRow } from '../relationships/api'
import { fromWorkItemText, parseWorkItemKey, WORK_ITEM_LIST, workItemColumns, type WorkItemTextRow } from '../work-items/api'
import { filterParameters, parseListQuery, type ListShape } from '../../src/http/list-query'

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

/** The search's values, by name: every search statement is given them (`searchProject`). */
const PROJECT = sql.placeholder('project')
/** The words as one prefix tsquery's text. */
const QUERY = sql.placeholder('query')
/** The substring pattern, or null. */
const PATTERN = sql.placeholder('pattern')
const LIMIT = sql.placeholder('limit')
/** Each word's tsquery text. */
const WORDS = sql.placeholder('words')
/** Whether the substring may be looked for through the trigram index (a term without spaces). */
const TRIGRAMS = sql.placeholder('trigrams')
/** The organization, named wherever a table is read: on Citus, one shard answers. */
const ORGANIZATION = sql.placeholder('organization')
/** The filters (`Kind.filter`): statuses, and an assignee's id or `none` (null: any). */
const STATUSES = sql.placeholder('statuses')
const ASSIGNEE = sql.placeholder('assignee')
/** The query as a work item key: its project key (upper case) and number, or null. */
const KEY = sql.placeholder('key')
const NUMBER = sql.placeholder('number')
/** A work item named by its key ranks above any text match (ts_rank is at most 1, the substring bonus small). */
const EXACT_SCORE = 100

interface Kind {
  /** The read model. */
  table: SQL
  /** Its columns the filters read (besides id, created_at, search_vector and `column`). */
  filtered: SQL
  /** The filters of the search on a row `t` of it (STATUSES and ASSIGNEE). */
  filter: SQL
  /** The text the substring fallback looks in. */
  column: string
  /** Added to the rank when the substring matches that text. */
  bonus: number
  /** The project's most recent rows first, in the order of an index that starts with project_id. */
  recency: SQL
  /** Whether a query that is a work item key finds that row (work items). */
  keyed?: boolean
}

const WORK_ITEM_KIND: Kind = {
  table: sql.raw('work_item_documents'),
  filtered: sql.raw(', status, assignee_id'),
  filter: sql`(${STATUSES}::text[] is null or t.status = any(${STATUSES}::text[])) and (${ASSIGNEE}::text is null or case when ${ASSIGNEE}::text = 'none' then t.assignee_id is null else t.assignee_id::text = ${ASSIGNEE}::text end)`,
  column: 'title',
  bonus: 0.2,
  recency: sql.raw('updated_at desc nulls last, id desc nulls last'),
  keyed: true,
}
// Entries are not filtered by their work item's fields; the filters are named so every statement types them.
const ENTRY_KIND: Kind = {
  table: sql.raw('entry_documents'),
  filtered: sql.raw(''),
  filter: sql`(${STATUSES}::text[] is null or true) and (${ASSIGNEE}::text is null or true)`,
  column: 'body',
  bonus: 0.1,
  recency: sql.raw('created_at desc nulls last, id desc nulls last'),
}

/** A constant of the statement's text (not a parameter). */
const constant = (value: number) => sql.raw(String(value))

/** The text column `t.<column>` the substring fallback looks in. */
const searched = (kind: Kind) => sql.raw(`t.${kind.column}`)

/** A row's relevance: its rank for the words plus the kind's bonus when the substring matches. */
const score = (kind: Kind) => sql`ts_rank(t.search_vector, (select q from query)) + case when ${PATTERN}::text is not null and ${searched(kind)} ilike ${PATTERN} then ${constant(kind.bonus)} else 0 end`

/** The project's `rows` most recent rows, with what matching and ranking read. */
const recent = (kind: Kind, rows = RECENT_ROWS) =>
  sql`(select id, created_at, search_vector, ${sql.raw(kind.column)}${kind.filtered} from ${kind.table} where project_id = ${PROJECT} and organization_id = ${ORGANIZATION} order by ${kind.recency} limit ${constant(rows)})`

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
 */
const matches = (kind: Kind, only = sql`true`) => sql`
  query as materialized (select to_tsquery('simple', ${QUERY}) as q),
  recent_words as materialized (
    select t.id, t.created_at, ${score(kind)} as score from ${recent(kind)} t
    where ${only} and ${kind.filter} and t.search_vector @@ (select q from query) limit ${constant(RANKING_WINDOW)}
  ),
  indexed as materialized (
    select case when cardinality(${WORDS}::text[]) < 2 then (select q from query) else (
      select to_tsquery('simple', string_agg(c.word, ' & ')) from (
        select w.word, count(r.id) as n, min(count(r.id)) over () as least from unnest(${WORDS}::text[]) as w(word)
          left join ${recent(kind, SAMPLE_ROWS)} r on r.search_vector @@ to_tsquery('simple', w.word)
          group by w.word
      ) c where c.n <= ${constant(BROADER)} * (c.least + 1)) end as q
  ),
  words as materialized (
    select id, created_at, score from recent_words where (select count(*) from recent_words) >= ${LIMIT}
    union all
    (select t.id, t.created_at, ${score(kind)} from ${kind.table} t
      where (select count(*) from recent_words) < ${LIMIT} and ${only} and t.project_id = ${PROJECT} and t.organization_id = ${ORGANIZATION} and ${kind.filter}
        and t.search_vector @@ (select q from indexed) and ts_match_vq(t.search_vector, (select q from query))
      limit ${constant(RANKING_WINDOW)})
  ),
  recent_substrings as materialized (
    select t.id, t.created_at, ${score(kind)} as score from ${recent(kind, SAMPLE_ROWS)} t where ${searched(kind)} ilike ${PATTERN} and ${kind.filter}
  ),
  substrings as (
    select id, created_at, score from recent_substrings where (select count(*) from recent_substrings) >= ${LIMIT} - (select count(*) from words)
    union all
    (select t.id, t.created_at, ${score(kind)} from ${kind.table} t
      where ${TRIGRAMS} and (select count(*) from recent_substrings) < ${LIMIT} - (select count(*) from words) and t.project_id = ${PROJECT} and t.organization_id = ${ORGANIZATION} and ${searched(kind)} ilike ${PATTERN}
        and ${kind.filter}
      limit (select ${LIMIT} - count(*) from words))
  ),
  matches as (
    select id, created_at, max(score) as score from (
      select id, created_at, score from words
      union all
      select id, created_at, score from substrings where ${only} and ${PATTERN}::text is not null and (select count(*) from words) < ${LIMIT}
      ${kind.keyed ? sql`union all ${keyed(kind, only)}` : sql``}
    ) m group by id, created_at
  )`

/**
 * The row a query that is a work item key names (none otherwise): its number in the project, when
 * the key is one the project has or had (the projects plugin's key directory).
 */
const keyed = (kind: Kind, only: SQL) => sql`select t.id, t.created_at, ${constant(EXACT_SCORE)} from ${kind.table} t
      where ${KEY}::text is not null and ${only} and t.project_id = ${PROJECT} and t.organization_id = ${ORGANIZATION} and t.number = ${NUMBER}::int and ${kind.filter}
        and exists (select 1 from project_key_directory k where k.key = ${KEY}::text and k.organization_id = ${ORGANIZATION} and k.project_id = ${PROJECT})`

/** The best `limit` matches, then only their rows read in full (`columns`, over `alias`). */
const best = (kind: Kind, alias: string, columns: SQL) =>
  compileStatement(sql`with ${matches(kind)},
  best as (select id, created_at, score from matches order by score desc, created_at, id limit ${LIMIT})
  select ${columns} from best b join ${kind.table} ${sql.raw(alias)} on ${sql.raw(alias)}.id = b.id and ${sql.raw(alias)}.organization_id = ${ORGANIZATION} order by b.score desc, b.created_at, b.id`)

const WORK_ITEMS = best(WORK_ITEM_KIND, 'w', workItemColumns(sql`${ORGANIZATION}`))

const ENTRIES = best(ENTRY_KIND, 'e', ENTRY_COLUMNS)

/**
 * A relationship matches when either end matches; it ranks by its better end. The ends are looked
 * up by index from the matched work items (two joins, not one `or`), and a project without
 * relationships ranks no work items for them at all.
 */
const RELATIONSHIPS = compileStatement(sql`with ${matches(WORK_ITEM_KIND, sql`exists (select 1 from relationship_links where project_id = ${PROJECT} and organization_id = ${ORGANIZATION})`)},
  ends as (
    select r.id, m.score from relationship_links r join matches m on m.id = r.source_work_item_id where r.project_id = ${PROJECT} and r.organization_id = ${ORGANIZATION}
    union all
    select r.id, m.score from relationship_links r join matches m on m.id = r.target_work_item_id where r.project_id = ${PROJECT} and r.organization_id = ${ORGANIZATION}
  ),
  best as (select id, max(score) as score from ends group by id)
  select ${RELATIONSHIP_COLUMNS} from best b join relationship_links r on r.id = b.id and r.organization_id = ${ORGANIZATION} order by b.score desc, r.created_at, r.id limit ${LIMIT}`)

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

/** The search options of a request's `q`, `limit` and filters (400 naming a bad filter or an unknown key); `me` in `assigneeId` is `caller`. */
export function searchOptions(input: Record<string, unknown>, caller: string): SearchOptions {
  const { q, limit, ...filters } = input as { q: string; limit?: number }
  const { values } = parseListQuery(SEARCH_FILTERS, filters, { ignore: ['projectId'], caller })
  const assignee = values.assigneeId?.anyOf[0]
  return { q, limit: limit ?? 20, statuses: (values.status?.anyOf as string[] | undefined) ?? null, assignee: assignee === undefined ? null : (assignee ?? 'none') }
}

/** Work items, entries and relationships of the project matching `q`, best first, `limit` each. */
export async function searchProject(db: Database, access: ProjectAccessService, actor: Actor, projectId: string, options: SearchOptions) {
  await access.requireProjectAccess(actor, projectId, 'viewer')
  const words = wordQueries(options.q)
  const key = parseWorkItemKey(options.q.trim())
  const values = {
    key: key?.projectKey ?? null,
    number: key?.number ?? null,
    project: projectId,
    query: words.join(' & '),
    pattern: substringPattern(options.q),
    limit: options.limit,
    words,
    trigrams: !/\s/.test(options.q.trim()),
    organization: actor.organizationId,
    statuses: options.statuses ?? null,
    assignee: options.assignee ?? null,
  }
  const [workItems, entries, relationships] = await Promise.all([
    runStatement<WorkItemTextRow>(db, WORK_ITEMS, values),
    runStatement<EntryTextRow>(db, ENTRIES, values),
    runStatement<RelationshipTextRow>(db, RELATIONSHIPS, values),
  ])
  return {
    workItems: workItems.map(fromWorkItemText),
    entries: entries.map(toEntry),
    relationships: relationships.map(toRelationship),
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
