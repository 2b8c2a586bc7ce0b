/**
 * Entries of a work item, access-checked through the work item's project: viewers read, editors
 * write, and only the author or a project owner may edit or delete an entry.
 */
import { and, eq, sql } from 'drizzle-orm'
import { changedFields } from '../../src/audit'
import { queryText, type Database, type Executor, type Transaction } from '../../src/db'
import { checkIfMatch, created } from '../../src/http/answer'
import type { IdempotentRequest } from '../../src/http/idempotency'
import { forbidden, notFound } from '../../src/http/errors'
import type { ListCache } from '../../src/http/list-cache'
import type { PageRequest } from '../../src/http/pagination'
import { isUuid, uuidv7 } from '../../src/ids'
import { lineProblem, assertLevel, creationOrderSection, levelRank, type AccessLevel, type ImportSection, type ProjectAccess, type ProjectAccessService } from '../projects/api'
import type { UserDirectory } from '../auth/api'
import type { EntriesFace } from './api'
import type { Actor } from '../../src/services/identity'
import { listTotal, type CountTable } from '../../src/counts'
import { listIdentity, parseListQuery, readCursor } from '../../src/http/list-query'
import { selectListPage, nextUpdatedAt } from '../../src/sql'
import type { Writes } from '../../src/writes'
import type { WorkItemsFace } from '../work-items/api'
import { param } from '../../src/statements'
import { ENTRY_COLUMNS, ENTRY_LIST, EntryInput, toEntry, type EntryPatch, type EntryResource, type EntryTextRow } from './model'
import { entries, entryCounts, type EntryRow } from './schema'

/**
 * The caller's access to the project of a work item of their organization: 404 when the work
 * item is unknown, elsewhere, or in a project they cannot see.
 */
/** `share` in a write: the work item's key-share lock before anything else (WorkItemsFace.projectOf). */
async function accessThroughWorkItem(executor: Executor, deps: EntryDeps, actor: Actor, workItemId: string, required: AccessLevel, share = false): Promise<ProjectAccess> {
  const projectId = await deps.workItems.projectOf(executor, actor.organizationId, workItemId, share)
  if (!projectId) throw notFound('No such work item.')
  return deps.access.requireProjectAccess(actor, projectId, required, executor)
}

/** The organization's entry `id`, as a condition (its primary key). */
const theEntry = (organizationId: string, id: string) => and(eq(entries.id, id), eq(entries.organizationId, organizationId))

async function findEntry(executor: Executor, organizationId: string, workItemId: string, entryId: string, lock = false): Promise<EntryRow> {
  if (!isUuid(entryId)) throw notFound('No such entry.')
  const query = executor
    .select()
    .from(entries)
    .where(and(theEntry(organizationId, entryId), eq(entries.workItemId, workItemId)))
  const [row] = lock ? await query.for('update') : await query
  if (!row) throw notFound('No such entry.')
  return row
}

export interface EntryDeps {
  db: Database
  lists: ListCache
  writes: Writes
  access: ProjectAccessService
  workItems: WorkItemsFace
}

/** Editor access, then the entry's author or a project owner. */
function requireAuthorOrOwner(granted: ProjectAccess, actor: Actor, entry: EntryRow) {
  assertLevel(granted, 'editor')
  if (entry.authorId !== actor.userId && levelRank(granted.level) < levelRank('owner'))
    throw forbidden('Only the author of an entry or a project owner may change it.')
}

/** A work item's maintained counts per kind (entry_counts), moved by the unit of work of each change. */
const ENTRY_COUNTS: CountTable = { table: 'entry_counts', scope: 'work_item_id', key: 'kind', filter: 'kind' }

/** The plugin's public face (api.ts): content order writes positions through it. */
export const entriesFace: EntriesFace = {
  async writeOrder(tx, organizationId, ids) {
    if (!ids.length) return
    await queryText(
      tx,
      `update entries t set position = u.position - 1 from unnest($1::uuid[]) with ordinality as u(id, position)
        where t.id = u.id and t.organization_id = $2 and t.position <> u.position - 1`,
      [ids, organizationId],
    )
  },
}

/** Entries bound once; every function returns the resource in its API shape. */
/** The project's entries in its export, in creation order, each as API v1 shows it. */
export const entryExportSection = creationOrderSection<EntryTextRow>({ type: 'entry', order: 50, scope: 'entries:read', table: 'entries', alias: 'e', columns: ENTRY_COLUMNS, shape: toEntry })

/**
 * An import's entries (after its work items): each `entry` line on the work item its `workItemId`
 * names in the file (else refused), its author matched among the organization's active users (by
 * id, email or username; else the importer, noted), its position kept; inserted in batches of
 * 1,000 rows, the counts of each work item moved in one statement.
 */
export function entryImportSection(users: UserDirectory): ImportSection {
  return {
    type: 'entry',
    order: 50,
    scope: 'entries:write',
    async write({ tx }, context) {
      const lines = context.lines('entry')
      if (!lines.length) return 0
      const { actor, projectId } = context
      const items = context.ids('work_item')
      const authors = await users.activeUsersNamed(tx, actor.organizationId, lines.map(({ data }) => data.authorId).filter((id): id is string => typeof id === 'string'))
      const rows: { workItemId: string; kind: EntryRow['kind']; body: string; authorId: string; position: number }[] = []
      for (const [index, { line, data }] of lines.entries()) {
        const input = { body: data.body, ...(data.kind !== undefined ? { kind: data.kind } : {}) }
        const problem = lineProblem(EntryInput, input)
        if (problem) {
          context.refuse(line, problem)
          continue
        }
        const workItemId = typeof data.workItemId === 'string' ? items.get(data.workItemId) : undefined
        if (!workItemId) {
          context.refuse(line, 'workItemId: no work item of this import has this id')
          continue
        }
        const authorId = typeof data.authorId === 'string' ? authors.get(data.authorId) : undefined
        if (!authorId && data.authorId !== undefined) context.note(line, `the author ${String(data.authorId).slice(0, 80)} is not an active user of this organization: you are its author`)
        rows.push({ workItemId, kind: ((input as EntryInput).kind ?? 'comment') as EntryRow['kind'], body: input.body as string, authorId: authorId ?? actor.userId, position: Number.isInteger(data.position) && Math.abs(data.position as number) <= 1_000_000_000 ? (data.position as number) : index })
      }
      // Multi-row inserts, every row naming the organization: Citus routes each to its one shard.
      for (let from = 0; from < rows.length; from += 1000)
        await tx.insert(entries).values(rows.slice(from, from + 1000).map((row) => ({ ...row, organizationId: actor.organizationId, projectId })))
      const counted = new Map<string, { workItemId: string; kind: string; items: number }>()
      for (const { workItemId, kind } of rows) {
        const key = `${workItemId} ${kind}`
        const entry = counted.get(key) ?? counted.set(key, { workItemId, kind, items: 0 }).get(key)!
        entry.items++
      }
      const moves = [...counted.values()].sort((a, b) => (a.workItemId + a.kind < b.workItemId + b.kind ? -1 : 1))
      for (let from = 0; from < moves.length; from += 1000)
        await tx
          .insert(entryCounts)
          .values(moves.slice(from, from + 1000).map((move) => ({ ...move, kind: move.kind as EntryRow['kind'], organizationId: actor.organizationId })))
          .onConflictDoUpdate({ target: [entryCounts.workItemId, entryCounts.kind, entryCounts.organizationId], set: { items: sql`${entryCounts.items} + excluded.items` } })
      return rows.length
    },
  }
}

export function createEntries(deps: EntryDeps) {
  const { db } = deps
  return {
    /**
     * Entries of a work item (viewer), filtered and sorted (model.ts ENTRY_LIST; content order by
     * default), by page or cursor; the total from the maintained counts when the filters are at
     * most `kind`, else a count over the filters' index.
     */
    async list(actor: Actor, workItemId: string, input: Record<string, unknown>, request: PageRequest) {
      const query = parseListQuery(ENTRY_LIST, input, { caller: actor.userId })
      const identity = listIdentity(ENTRY_LIST, `${actor.organizationId} ${workItemId}`, query)
      const after = readCursor(request, identity, query.order)
      const projectId = await deps.workItems.projectOf(db, actor.organizationId, workItemId)
      if (!projectId) throw notFound('No such work item.')
      const { version } = await deps.access.listAccess(actor, projectId)
      return deps.lists.page(`entries ${workItemId} ${query.canonical} ${request.cursor ?? request.page} ${request.size}`, version, () => {
        const scope = { scope: param(workItemId), organization: param(actor.organizationId) }
        const conditions = [sql`e.work_item_id = ${scope.scope}`, sql`e.organization_id = ${scope.organization}`, ...query.conditions]
        const total = listTotal(ENTRY_COUNTS, query, scope, 'entries e', conditions)
        return selectListPage<EntryTextRow, EntryResource>(
          db,
          { columns: ENTRY_COLUMNS, from: 'entries e', conditions, order: query.order, total, identity, after },
          request,
          toEntry,
        )
      })
    },

    async get(actor: Actor, workItemId: string, entryId: string) {
      await accessThroughWorkItem(db, deps, actor, workItemId, 'viewer')
      return toEntry(await findEntry(db, actor.organizationId, workItemId, entryId))
    },

    /** Adds an entry at the end of the work item's entries (editor); the caller is its author. */
    create(actor: Actor, workItemId: string, input: EntryInput, request?: IdempotentRequest) {
      return deps.writes.change(actor, 'project', async ({ tx, audit, emit, count }) => {
        const { projectId } = await accessThroughWorkItem(tx, deps, actor, workItemId, 'editor', true)
        await deps.workItems.lockOrdering(tx as Transaction, actor.organizationId, projectId)
        const [{ next }] = (await queryText<{ next: number }>(tx, 'select coalesce(max(position) + 1, 0)::int as next from entries where work_item_id = $1 and organization_id = $2', [
          workItemId,
          actor.organizationId,
        ])) as [{ next: number }]
        const [row] = await tx
          .insert(entries)
          .values({ organizationId: actor.organizationId, projectId, workItemId, kind: input.kind ?? 'comment', body: input.body, authorId: actor.userId, position: next })
          .returning()
        count(ENTRY_COUNTS, workItemId, { [row!.kind]: 1 })
        await audit({ action: 'entry.created', resourceType: 'entry', resourceId: row!.id, projectId, changes: { after: { workItemId, kind: row!.kind, body: row!.body } } })
        const entry = toEntry(row!)
        await emit({ type: 'entry.created', projectId, data: entry })
        return created(entry)
      }, request)
    },

    update(actor: Actor, workItemId: string, entryId: string, patch: EntryPatch, ifMatch?: string) {
      return deps.writes.change(actor, 'project', async ({ tx, audit, emit, count }) => {
        const granted = await accessThroughWorkItem(tx, deps, actor, workItemId, 'viewer', true)
        const current = await findEntry(tx, actor.organizationId, workItemId, entryId, true)
        requireAuthorOrOwner(granted, actor, current)
        checkIfMatch(ifMatch, current.updatedAt)
        const changes = changedFields(current, patch)
        if (!changes) return toEntry(current)
        const [row] = await tx
          .update(entries)
          .set({ ...patch, updatedAt: nextUpdatedAt(current.updatedAt) })
          .where(theEntry(actor.organizationId, current.id))
          .returning()
        if (row!.kind !== current.kind) count(ENTRY_COUNTS, workItemId, { [current.kind]: -1, [row!.kind]: 1 })
        await audit({ action: 'entry.updated', resourceType: 'entry', resourceId: current.id, projectId: granted.projectId, changes })
        const updated = toEntry(row!)
        await emit({ type: 'entry.updated', projectId: granted.projectId, data: updated, previous: changes.before })
        return updated
      })
    },

    delete(actor: Actor, workItemId: string, entryId: string, ifMatch?: string) {
      return deps.writes.change(actor, 'project', async ({ tx, audit, emit, count }) => {
        const granted = await accessThroughWorkItem(tx, deps, actor, workItemId, 'viewer', true)
        const current = await findEntry(tx, actor.organizationId, workItemId, entryId, true)
        requireAuthorOrOwner(granted, actor, current)
        checkIfMatch(ifMatch, current.updatedAt)
        await tx.delete(entries).where(theEntry(actor.organizationId, current.id))
        count(ENTRY_COUNTS, workItemId, { [current.kind]: -1 })
        await audit({
          action: 'entry.deleted',
          resourceType: 'entry',
          resourceId: current.id,
          projectId: granted.projectId,
          changes: { before: { workItemId, kind: current.kind, body: current.body } },
        })
        await emit({ type: 'entry.deleted', projectId: granted.projectId, data: toEntry(current) })
        return { id: current.id }
      })
    },
  }
}

export type EntryService = ReturnType<typeof createEntries>
