/**
 * The `work-items` plugin's public face: the work item model and its columns as a fragment (for
 * plugins that read work items through the `work_item_documents` read model, aliased `w`), and the
 * functions other plugins may call inside their own transactions.
 */
import type { SQL } from 'drizzle-orm'
import type { TSchema } from 'elysia'
import type { Executor, Transaction } from '../../src/db'
import type { ApiError } from '../../src/http/errors'
import type { Filter, SortKey } from '../../src/http/list-query'
import type { Actor } from '../../src/services/identity'
import { serviceRef } from '../../src/services/registry'
import type { ImportContext } from '../projects/api'

export { WORK_ITEM_STATUSES, type WorkItemStatus } from './schema'
export { fromWorkItemText, WORK_ITEM_LIST, WorkItem, workItemColumns, type WorkItemResource, type WorkItemTextRow } from './model'
/** A work item key (`ENG-123`, any case) as its project key (upper case) and number, or undefined (keys.ts). */
export { parseWorkItemKey } from './keys'

/**
 * The statement the work-item list runs for a request on a cache miss, after its access check,
 * without running it (to run elsewhere: pgbench, EXPLAIN): its text and the values of its `$n`.
 * The work items' own list, without the properties other plugins add.
 */
export { listStatement } from './service'
/** A work item's columns as the API shows it with the extensions' (`w`, the statement's organization): what the export and every read select. */
export { columnsOf } from './service'

export interface WorkItemsFace {
  /**
   * Takes the ordering lock of the organization's project in `tx` (creating it if needed) and
   * returns the last work item number handed out, advanced by one with `advance` (by that many
   * with a number: a batch's numbers are the `advance` up to the one returned). Every change of
   * positions in a project (new work items, new entries, content order) takes it first, so
   * positions never collide.
   */
  lockOrdering(tx: Transaction, organizationId: string, projectId: string, advance?: boolean | number): Promise<number>
  /** Renumbers the organization's work items 0..n-1 in the order of `ids` (the caller holds the ordering lock). */
  writeOrder(tx: Transaction, organizationId: string, ids: readonly string[]): Promise<void>
  /**
   * The project of a work item of the organization, or undefined (also for an id that is no UUID).
   * With `share`, in a transaction that will write rows pointing at the work item (entries and
   * their counts), it also takes the work item's key-share lock now: before the project's version
   * row, which the change's audit record takes, as every writer of the project takes them (a
   * foreign key's check would take it only later, after the version row: a deadlock with a PATCH
   * or delete of the work item, which hold the work item and then want the version row).
   */
  projectOf(executor: Executor, organizationId: string, workItemId: string, share?: boolean): Promise<string | undefined>
  /**
   * The work item named by `ref`, its id or its key (`ENG-123`, any case, an old project key too),
   * with its project, when the caller can view that project; one 404 for whatever is missing (an
   * invisible project never tells that the work item exists). Two statements.
   */
  locate(actor: Actor, ref: string): Promise<{ id: string; projectId: string }>
  /**
   * Of `ids`, those of work items in the organization's project. With `share` (a transaction that
   * will add a row pointing at them), their key-share locks are taken now, in id order: a work item
   * being deleted meanwhile is then waited for and missing, rather than locked later by a foreign
   * key's check while its deletion waits for the new row (a deadlock).
   */
  inProject(executor: Executor, organizationId: string, projectId: string, ids: readonly string[], share?: boolean): Promise<string[]>
  /**
   * The work items of the project that a saved view (`viewId`; null: the whole project) shows the
   * actor, as a subquery to select from: rows `{id, status, priority, assigneeId, createdAt,
   * startedAt, closedAt}` plus the extensions' properties as the API shows them (`labels`:
   * `[{id, name, color}]`, `fields`: `{key: value}`), filtered exactly as the list filters them
   * (dashboards measure it). 404 when the actor cannot view the project; 400 naming `view` when they
   * cannot read the view there. It names the organization and the project, bound (one shard).
   * With the view's name and version (when it last changed). `executor`: a transaction to read in
   * (PGlite has one connection).
   */
  matching(actor: Actor, projectId: string, viewId: string | null, executor?: Executor): Promise<{ items: SQL; viewName: string | null; viewVersion: string | null }>
  /**
   * Calls `observer` in the transaction of every change or deletion of a saved view (after its
   * audit record): dashboards built from the view build again. Called in a plugin's `setup`.
   */
  onViewChanged(observer: ViewObserver): void
  /**
   * Whether the work-item list has this filter (`label`) or dynamic prefix (`field.`): the plugin
   * adding it (labels, custom fields) is enabled, and work items carry its property.
   */
  filterable(name: string): boolean
  /**
   * Adds a property to work items (labels, custom fields): shown on every read, accepted on
   * create and PATCH (bulk included), filterable. Called in a plugin's `setup`; the work item
   * document and tools are built after every setup, so a disabled plugin's property is nowhere.
   */
  extend(extension: WorkItemExtension): void
}

/** Told of a saved view changed or deleted, in that change's transaction. */
export type ViewObserver = (tx: Transaction, organizationId: string, projectId: string, viewId: string) => Promise<void>

/** A work item after a write, for an extension: which item, in which project. */
export interface ExtendedItem {
  id: string
  projectId: string
}

/** What an extension's write changed: the property's old and new values (`previous` of update events). */
export interface ExtensionChange {
  previous: unknown
  next: unknown
}

/** A property another plugin adds to work items (WorkItemsFace.extend). */
export interface WorkItemExtension {
  /** The property's name on the work item and in create and PATCH bodies (`labels`, `fields`). */
  property: string
  /** Its schema on the work item. */
  schema: TSchema
  /** Its schema in a create or PATCH body. */
  input: TSchema
  /**
   * A SQL expression over a `work_items` row aliased `w` giving its value (JSON): part of every
   * read. `organization` is the statement's organization id (a bound value or a placeholder): a
   * subquery names the organization by it, not by `w.organization_id`, so Citus sees one
   * organization throughout and routes the statement to one shard.
   */
  column(organization: SQL): SQL
  /**
   * Writes the value a create or PATCH gave (`undefined`: not given; a create still calls it, to
   * refuse a missing required value) in the change's transaction, after the work item row is
   * written. Throws a 400 naming the property's path (`fields.severity`, `labels[2]`), also for an
   * id it cannot resolve (src/http/errors.ts `requireReferences`); returns the change, or undefined
   * when nothing changed.
   */
  write(tx: Transaction, actor: Actor, item: ExtendedItem, value: unknown, creating: boolean): Promise<ExtensionChange | undefined>
  /**
   * `write` for a batch (bulk create and PATCH, import: the items of one request, in its order,
   * after their rows are written), in a few statements for the whole batch. Each entry's outcome at
   * its index: its change, undefined (nothing changed), or the ApiError refusing it (with a field
   * path of its own, as `write` throws it: the caller names the item); nothing is written when any
   * entry is refused. Without it, `write` runs for each entry.
   */
  writeMany?(tx: Transaction, actor: Actor, entries: readonly { item: ExtendedItem; value: unknown }[], creating: boolean): Promise<Array<ExtensionChange | undefined | ApiError>>
  /**
   * An import's values of the property (each `value` as the export shows it, or a CSV's: labels as
   * `[{name}]`), for all the lines at once, each as a create takes it (labels: their new ids; field
   * values with their options remapped), after the sections of lower order wrote theirs. A value it
   * cannot take is refused (`context.refuse`, its line) or left out and noted. Without it the
   * property is left out of an import.
   */
  imported?(tx: Transaction, context: ImportContext, entries: readonly { line: number; value: unknown }[]): Promise<unknown[]>
  /** Its input schema for one organization (MCP tools list their caller's own: custom field keys, types, options). */
  describe?(executor: Executor, organizationId: string): Promise<TSchema>
  /**
   * Filters it adds to every work-item list, with their query parameters' documentation. Their
   * `within` is given the list's scope: `organization` and `project`, the list's ids bound.
   */
  filters?: Readonly<Record<string, Filter>>
  /**
   * Filters and sorts whose keys start with `prefix` (`field.`): the organization's own (read only
   * when a request names one), with a line describing them for the documentation. A sort's column
   * names the organization by its id, bound (`load` is given it).
   */
  dynamic?: {
    prefix: string
    description: string
    load(executor: Executor, organizationId: string): Promise<{ filters: Record<string, Filter>; sorts: Record<string, SortKey> }>
  }
}

export const WorkItemsRef = serviceRef<WorkItemsFace>('work-items.face', 'work-items')
