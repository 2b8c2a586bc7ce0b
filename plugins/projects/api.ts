/**
 * Project access: the one service every project-scoped plugin asks. It is provided by the
 * `projects` plugin; no other plugin computes access itself.
 */
import { sql, type SQL } from 'drizzle-orm'
import { queryRows, type Executor, type Transaction } from '../../src/db'
import type { Write } from '../../src/writes'
import { Value } from '@sinclair/typebox/value'
import type { TSchema } from '@sinclair/typebox'
import { forbidden } from '../../src/http/errors'
import { itemsFromValueErrors } from '../../src/http/validation-items'
import type { Actor } from '../../src/services/identity'
import { serviceRef } from '../../src/services/registry'

/** The member's access check and the members page, compiled, as the service runs them (statements run elsewhere: pgbench). */
export { accessCheckStatement } from './access-rule'
export { membersPageStatement } from './grant-kinds'

export type AccessLevel = 'viewer' | 'editor' | 'owner'
export const ACCESS_LEVELS: readonly AccessLevel[] = ['viewer', 'editor', 'owner']

/** viewer < editor < owner. */
export const levelRank = (level: AccessLevel | null | undefined): number => (level ? ACCESS_LEVELS.indexOf(level) + 1 : 0)

const REQUIRED_MESSAGE: Record<AccessLevel, string> = {
  viewer: 'This needs viewer access to the project.',
  editor: 'This needs editor access to the project.',
  owner: 'This needs owner access to the project.',
}

/** Throws 403 FORBIDDEN when `access` is below `required` (after the thing was found: 404 first). */
export function assertLevel(access: { level: AccessLevel }, required: AccessLevel): void {
  if (levelRank(access.level) < levelRank(required)) throw forbidden(REQUIRED_MESSAGE[required])
}

export interface ProjectAccess {
  projectId: string
  organizationId: string
  /** The caller's effective level: the highest of direct membership and linked teams. */
  level: AccessLevel
}

export interface ProjectAccessService {
  /**
   * The caller's access to the project, in one query. Throws 404 when the project is unknown,
   * in another organization or invisible to the caller, and 403 FORBIDDEN when it is visible but
   * the level is below `required`. `executor` lets a transaction lock and check together.
   */
  requireProjectAccess(actor: Actor, projectId: string, required: AccessLevel, executor?: Executor): Promise<ProjectAccess>
  /**
   * The same check for a list read, in the same one statement, with the version its cached
   * pages are keyed on (the project's and the organization's: `ListCache.page`).
   */
  listAccess(actor: Actor, projectId: string, required?: AccessLevel): Promise<ProjectAccess & { version: string }>
  /**
   * The ids of the projects the actor can see, as a subquery (`select p.id from projects p where
   * …`, the actor's organization and user bound): the same rule as the check, for list statements
   * of other plugins (`… where x.project_id in (<subquery>)`).
   */
  visibleProjects(actor: Actor): SQL
  /**
   * A condition, for statements of other plugins, that the organization's active user `user` can
   * view `project` now (each a column or a bound value): the same rule as the check, set-based, so
   * one statement can keep, of many users, those who see a project (notifications' fan-out).
   */
  viewerCondition(organization: SQL, project: SQL, user: SQL): SQL
  /**
   * Of `projectIds`, those the organization's user can see now by the same rule (none for a
   * deactivated user): for work done later on someone's behalf, such as webhook deliveries. One
   * statement; the user's role is read in it.
   */
  projectsVisibleTo(executor: Executor, organizationId: string, userId: string, projectIds: readonly string[]): Promise<Set<string>>
  /**
   * The projects the caller can view now (`among`: only those of these ids; unknown or invisible
   * ones are simply left out), for a list over all of them, in one statement whose cost grows with
   * the caller's memberships and their teams' links, never with the projects they cannot see (a
   * superadministrator sees every project of the organization). With the version a cached page
   * of such a list is keyed on: which projects they are, each one's list version and the
   * organization's (`ListCache.page`), so a change to any of them, or to who sees them, moves it.
   */
  viewableProjects(actor: Actor, among?: readonly string[]): Promise<ViewableProjects>
}

/** The projects a caller can view (ProjectAccessService.viewableProjects). */
export interface ViewableProjects {
  /** How many. */
  count: number
  /** Their ids as a subquery of one column `id`, values bound, every table named in the caller's organization. */
  ids: SQL
  /** The cached pages' version of a list over them. */
  version: string
}

export const ProjectAccessRef = serviceRef<ProjectAccessService>('projects.access', 'projects')

/**
 * A part of a project's export (`GET /api/v1/projects/{projectId}/export`): one type of line, read
 * by the plugin owning its tables. The projects plugin writes the project's own line and its
 * members; other plugins add theirs (labels, custom fields, work items, entries, relationships) in
 * their `setup`, and the export is whatever the enabled plugins add.
 */
export interface ExportSection {
  /** The lines' `type` (`work_item`). */
  type: string
  /** Where its lines go, lowest first: what a line refers to comes before it (labels before the work items carrying them). */
  order: number
  /** The scope reading it needs (besides `projects:read`): the export route asks for every section's. */
  scope: string
  /**
   * The next (at most) `limit` of the project's resources after `after` (null: from the first),
   * each exactly as API v1 shows it, and where to go on from (null: there are no more). Runs in the
   * export's one read-only repeatable-read transaction `tx`; every statement names the organization
   * (one shard on Citus) and reads by an index in the order of `after`, so a page costs the same at
   * any depth.
   */
  read(tx: Transaction, organizationId: string, projectId: string, after: string | null, limit: number): Promise<{ rows: unknown[]; after: string | null }>
}

/** A line of an import: where it is in the file (1-based, the header row of a CSV is line 1) and its `data`. */
export interface ImportLine {
  line: number
  data: Record<string, unknown>
}

/** What an import section is given besides its unit of work (ImportSection.write). */
export interface ImportContext {
  actor: Actor
  projectId: string
  /** Whether the importer may create organization-wide definitions (labels, custom fields): an administrator. */
  administrator: boolean
  /** The lines of a type, in file order (a section may read another's: labels read the names work items carry). */
  lines(type: string): readonly ImportLine[]
  /**
   * What a section's resources are now, by type (`label`, `work_item`): the file's id (or another
   * key the section documents, e.g. `name:<lower-case name>`) to the new id. A section fills its
   * own before any later section runs.
   */
  ids(type: string): Map<string, string>
  /** Refuses a line: the import then writes nothing and answers 400 with the first 20, in line order. */
  refuse(line: number, message: string): void
  /** Something imported otherwise than given (an assignee not in the organization: unassigned); the answer lists the first 20. */
  note(line: number, message: string): void
}

/**
 * The import side of a section (`POST /api/v1/projects/{projectId}/import`): writes the lines of
 * its type, in file order, into the project, in the import's one transaction, after every section
 * of a lower order. Set based: a few statements for all its lines (in batches), never per line.
 */
export interface ImportSection {
  type: string
  order: number
  /** The scope writing it needs (besides `projects:write`): the import route asks for every section's. */
  scope: string
  /**
   * Checks its lines (`ctx.refuse` for each that cannot be imported) and writes the others in the
   * unit of work `w` (no audit records or events of its own: the import records one of each);
   * returns how many it wrote. A section that refused lines ends the import (the transaction rolls
   * back; later sections do not run), so it need not write what it refused.
   */
  write(w: Write, ctx: ImportContext): Promise<number>
}

/**
 * What is wrong with an import line's `value` against `schema` (the create body a section takes),
 * worded as API v1 words a body's first problem (`Invalid field "status": …`; `whole` names the
 * value itself), or undefined.
 */
export function lineProblem(schema: TSchema, value: unknown, whole = 'line'): string | undefined {
  if (Value.Check(schema, value)) return undefined
  return itemsFromValueErrors(Value.Errors(schema, value), 'field', whole)[0]!.message
}

export interface ProjectTransfersFace {
  /** Adds a section to every project's export (in a plugin's `setup`). */
  exportSection(section: ExportSection): void
  /** Adds a section to every project's import (in a plugin's `setup`). */
  importSection(section: ImportSection): void
}

export const ProjectTransfersRef = serviceRef<ProjectTransfersFace>('projects.transfers', 'projects')

/**
 * The usual `read` of a section: `page` reads the rows after a position (its statement selects
 * the position as `after`, in its order, with `limit`), `shape` makes each the resource (leaving
 * `after` out); the last row's is where the next page begins, none when the page came back short.
 */
export async function readAfter<R extends { after: string }>(page: () => Promise<R[]>, limit: number, shape: (row: R) => unknown): Promise<{ rows: unknown[]; after: string | null }> {
  const rows = await page()
  const last = rows.length === limit ? rows[rows.length - 1]!.after : null
  return { rows: rows.map(shape), after: last }
}

/**
 * A section of the project's rows of one table (alias `alias`, with `organization_id`,
 * `project_id`, `created_at` and `id`) in creation order, an index's order (entries,
 * relationships): `columns` read as API v1 shows them through `shape`.
 */
export function creationOrderSection<R>(section: Omit<ExportSection, 'read'> & { table: string; alias: string; columns: SQL; shape: (row: R) => unknown }): ExportSection {
  const { table, alias, columns, shape, ...described } = section
  const column = (name: string) => sql.raw(`${alias}.${name}`)
  return {
    ...described,
    read(tx, organizationId, projectId, after, limit) {
      const [at, id] = after === null ? [] : after.split('|')
      const following = after === null ? sql`` : sql`and (${column('created_at')}, ${column('id')}) > (${at}::timestamptz, ${id}::uuid)`
      return readAfter(
        () =>
          queryRows<R & { after: string }>(
            tx,
            sql`select ${columns}, ${column('created_at')}::text || '|' || ${column('id')}::text as after from ${sql.raw(`${table} ${alias}`)}
                 where ${column('organization_id')} = ${organizationId} and ${column('project_id')} = ${projectId} ${following}
                 order by ${column('created_at')}, ${column('id')} limit ${limit}`,
          ),
        limit,
        ({ after: _, ...row }) => shape(row as R),
      )
    },
  }
}
