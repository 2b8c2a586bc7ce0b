/**
 * Statements and their plans, on PGlite and on a PostgreSQL server alike: the statements a
 * service sends while some work runs (statement-capture.ts on a server; PGlite's client wrapped
 * here), and a statement's EXPLAIN ANALYZE with planner settings of the test's choosing (set
 * locally in a transaction that is rolled back), flattened to its nodes.
 */
import type { Database } from '../../src/db'
import { queryText } from '../../src/db'
import { captureStatements, type CapturedStatement, type StatementCapture } from './statement-capture'

/** Captures the statements `db` sends (transaction control left out), whichever driver it runs on. */
export function captureAny(db: Database): StatementCapture {
  const client = (db as unknown as { session: { client: any } }).session.client
  if (typeof client.unsafe === 'function') return captureStatements(db)
  const original = client.query
  const originalTransaction = client.transaction
  let sink: CapturedStatement[] | null = null
  type Query = (this: unknown, text: string, parameters?: unknown[], ...rest: unknown[]) => unknown
  const recording =
    (query: Query): Query =>
    function (this: unknown, text: string, parameters?: unknown[], ...rest: unknown[]) {
      if (sink && typeof text === 'string' && !/^\s*(begin|commit|rollback|savepoint|release|set )/i.test(text)) sink.push({ text, parameters: [...(parameters ?? [])] })
      return query.call(this, text, parameters, ...rest)
    }
  client.query = recording(original)
  // A transaction's statements go through the transaction's own `query` (PGlite's `transaction(cb)`).
  client.transaction = function (this: unknown, callback: (tx: { query: Query }) => unknown, ...rest: unknown[]) {
    return originalTransaction.call(
      this,
      (tx: { query: Query }) => {
        tx.query = recording(tx.query)
        return callback(tx)
      },
      ...rest,
    )
  }
  return {
    async during(work) {
      const statements: CapturedStatement[] = []
      sink = statements
      try {
        await work()
      } finally {
        sink = null
      }
      return statements
    },
    release() {
      sink = null
      client.query = original
      client.transaction = originalTransaction
    },
  }
}

/** One node of a JSON plan, as EXPLAIN (ANALYZE, FORMAT JSON) writes it. */
export interface PlanNode {
  'Node Type': string
  'Index Name'?: string
  'Relation Name'?: string
  'Actual Rows'?: number
  'Actual Loops'?: number
  'Rows Removed by Filter'?: number
  'Rows Removed by Index Recheck'?: number
  Plans?: PlanNode[]
  [key: string]: unknown
}

/** Every node of a plan, depth first. */
export const planNodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(planNodes)]

/**
 * The plan of `text` with `parameters`, run (EXPLAIN ANALYZE) under `settings` (e.g.
 * `enable_seqscan: 'off'`: the plan the statement gets once its tables are too large to scan),
 * inside a transaction rolled back afterwards.
 */
export async function explainAnalyze(db: Database, text: string, parameters: unknown[], settings: Record<string, string> = {}): Promise<PlanNode> {
  let plan: PlanNode | undefined
  await db
    .transaction(async (tx) => {
      for (const [name, value] of Object.entries(settings)) await queryText(tx, `set local ${name} = ${value}`, [])
      const [row] = await queryText<Record<string, unknown>>(tx, `explain (analyze, format json) ${text}`, parameters)
      const value = Object.values(row!)[0]
      plan = ((typeof value === 'string' ? JSON.parse(value) : value) as Array<{ Plan: PlanNode }>)[0]!.Plan
      throw new RolledBack()
    })
    .catch((error) => {
      if (!(error instanceof RolledBack)) throw error
    })
  return plan!
}

class RolledBack extends Error {}

/** The rows a plan's scans touched: rows returned plus rows read and thrown away by a filter, times their loops. */
export const rowsTouched = (plan: PlanNode) =>
  planNodes(plan)
    // A bitmap heap scan counts the rows its bitmap index scan found: each row once.
    .filter((node) => node['Node Type'].includes('Scan') && node['Node Type'] !== 'Bitmap Index Scan')
    .reduce((sum, node) => sum + ((node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)) * (node['Actual Loops'] ?? 1), 0)
