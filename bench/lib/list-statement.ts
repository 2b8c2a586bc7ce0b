/**
 * The statement the service runs for one work-item list request on a cache miss, from the
 * work-items plugin's face (`listStatement`: the list's own code, not run). The benchmarks run it
 * under pgbench (work-items) and EXPLAIN ANALYZE (growth-reads), so they measure what the service
 * sends.
 */
import type { Actor } from '../../src/services/identity'
import { listStatement as workItemListStatement } from '../../plugins/work-items/api'

export interface ListRequest {
  organizationId: string
  userId: string
  projectId: string
  /** The list's query (`status`, `assigneeId`…) as the service parses it. */
  query?: Record<string, string>
  page?: number
  size: number
  cursor?: string
  /** 'database' (default, as the service's `server.listPagesBuiltBy`): the statement answering the page's JSON; 'service': its rows. */
  builtBy?: 'database' | 'service'
}

/** The list statement's text and the values of its `$n`, in order. */
export function listStatement(request: ListRequest): Promise<{ text: string; values: unknown[] }> {
  const actor = { organizationId: request.organizationId, userId: request.userId } as Actor
  const page = request.cursor === undefined ? { page: request.page ?? 0, size: request.size } : { page: 0, size: request.size, cursor: request.cursor }
  return workItemListStatement(actor, request.projectId, request.query ?? {}, page, request.builtBy ?? 'database')
}
