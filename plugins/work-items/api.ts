/**
 * The `work-items` plugin's public face: the work item model and its SQL-text columns (for plugins
 * that read work items through the `work_item_documents` read model, aliased `w`), and the
 * functions other plugins may call inside their own transactions.
 */
import type { Executor, Transaction } from '../../src/db'
import { serviceRef } from '../../src/services/registry'

export { WORK_ITEM_STATUSES, type WorkItemStatus } from './schema'
export { fromWorkItemText, WORK_ITEM_COLUMNS, WORK_ITEM_LIST, WorkItem, type WorkItemResource, type WorkItemTextRow } from './model'

export interface WorkItemsFace {
  /**
   * Takes the ordering lock of the organization's project in `tx` (creating it if needed) and
   * returns the last work item number handed out, advanced by one with `advance`. Every change of
   * positions in a project (new work items, new entries, content order) takes it first, so
   * positions never collide.
   */
  lockOrdering(tx: Transaction, organizationId: string, projectId: string, advance?: boolean): Promise<number>
  /** Renumbers the organization's work items 0..n-1 in the order of `ids` (the caller holds the ordering lock). */
  writeOrder(tx: Transaction, organizationId: string, ids: readonly string[]): Promise<void>
  /** The project of a work item of the organization, or undefined (also for an id that is no UUID). */
  projectOf(executor: Executor, organizationId: string, workItemId: string): Promise<string | undefined>
  /** Of `ids`, those of work items in the organization's project. */
  inProject(executor: Executor, organizationId: string, projectId: string, ids: readonly string[]): Promise<string[]>
}

export const WorkItemsRef = serviceRef<WorkItemsFace>('work-items.face', 'work-items')
