/**
 * Proof that a refused request changed nothing: every table of the test database gets a row-level
 * trigger that appends each committed insert, update and delete (with the row) to `fuzz_changes`.
 * A rolled-back write leaves no entry, so after a refused request the log must hold nothing new,
 * or only writes that cancel out (a row inserted and deleted again: an Idempotency-Key reserved
 * and freed). One indexed read per request, whatever the tables' size, and it watches the whole
 * database rather than the tables a route is expected to touch.
 *
 * Why not `count(*)` and `sum(hashtext(t::text))` of the route's tables after every request: on
 * PGlite that read costs about 35 ms per 3,000 rows (the audit log grows with every success), too
 * slow for 20,000 requests. The test service's own schema and behaviour are unchanged; the triggers
 * only add one insert to transactions that write.
 */
import { queryText } from '../../src/db'
import type { TestDatabase } from '../helpers/database'
import { testTriggers, TRIGGER_TABLE } from '../helpers/test-triggers'

export type Table = string

export interface Change {
  /** The node whose log holds it (0 off Citus) and its place there. */
  node: number
  seq: number
  table: Table
  op: 'INSERT' | 'UPDATE' | 'DELETE'
  row: string
}

/**
 * Columns that move on a refused request by design and are left out of the log: an API key's
 * `last_used_at` (written at most once a minute, off the request's path) and a session's
 * `last_seen_at` (touched at most once a minute on use).
 */
const BOOKKEEPING: Record<string, string> = { api_keys: 'last_used_at', sessions: 'last_seen_at' }

/** Runs a read on one node whose one parameter `$1` is a number. */
type Reader = (text: string, seq: number) => Promise<Array<Record<string, unknown>>>

/**
 * Installs the log and a trigger on every table there is (after the migrations). On PGlite each
 * logged change is also announced with NOTIFY, which PGlite delivers before the committing call
 * returns: the log is read only when something was written, not after every request (a read
 * costs PGlite about as much as the request it checks). A server's read is cheap and its
 * notifications arrive on another connection, late: there the log is read every time.
 *
 * On Citus the triggers run on the shards, on the workers, and write a log of their own node
 * (tests/helpers/test-triggers.ts): every node has one, each with its own sequence, and a change
 * is logged on the node that holds its row (a reference table's on one of its copies). A row
 * never moves between nodes during a run, so its inserts and deletes are in one log, in order.
 */
export async function installChangeLog(database: TestDatabase): Promise<ChangeLog> {
  const { db, pglite } = database
  const triggers = await testTriggers(database)
  await triggers.onEveryNode('create table fuzz_changes (seq bigserial primary key, table_name text not null, op text not null, row_text text not null)')
  await queryText(
    db,
    `create function fuzz_log_change() returns trigger language plpgsql as $$
     declare logged bigint;
     begin
       ${triggers.oneCopy}
       insert into fuzz_changes (table_name, op, row_text)
         values (${TRIGGER_TABLE}, tg_op, case when tg_op = 'DELETE' then old::text else new::text end)
         returning seq into logged;
       ${pglite ? `perform pg_notify('${CHANNEL}', logged::text);` : ''}
       return null;
     end $$`,
    [],
  )
  const tables = await queryText<{ name: string }>(db, `select tablename as name from pg_tables where schemaname = 'public' and tablename <> 'fuzz_changes' order by 1`, [])
  for (const { name: table } of tables) {
    const ignored = BOOKKEEPING[table]
    if (!ignored) {
      await triggers.createTrigger({ name: 'fuzz_log', timing: 'after insert or update or delete', table, function: 'fuzz_log_change' })
      continue
    }
    await triggers.createTrigger({ name: 'fuzz_log', timing: 'after insert or delete', table, function: 'fuzz_log_change' })
    await triggers.createTrigger({
      name: 'fuzz_log_update',
      timing: 'after update',
      table,
      condition: `(to_jsonb(old) - '${ignored}') is distinct from (to_jsonb(new) - '${ignored}')`,
      function: 'fuzz_log_change',
    })
  }
  // PGlite's simple protocol costs a third of a parameterised statement, so the number goes into
  // the text there; the server keeps one prepared statement per read.
  const readers: Reader[] = pglite
    ? [async (text, seq) => (await pglite.exec(text.replace('$1', String(seq)))).at(-1)?.rows ?? []]
    : triggers.nodes.map((node) => (text, seq) => node.query(text, [seq]))
  const log = new ChangeLog(
    readers,
    tables.map((table) => table.name),
    Boolean(pglite),
    () => triggers.close(),
  )
  if (pglite) await pglite.listen(CHANNEL, (payload) => log.announced(Number(payload)))
  await log.mark()
  return log
}

const CHANNEL = 'fuzz_changes'

/** Inserts and deletes of identical rows cancel out; whatever is left is a change. */
export function netChanges(changes: Change[]): Change[] {
  const left: Change[] = []
  const inserted = new Map<string, Change[]>()
  for (const change of changes) {
    const key = `${change.table}\u0000${change.row}`
    if (change.op === 'INSERT') {
      inserted.set(key, [...(inserted.get(key) ?? []), change])
      left.push(change)
    } else if (change.op === 'DELETE' && inserted.get(key)?.length) {
      const undone = inserted.get(key)!.pop()!
      left.splice(left.indexOf(undone), 1)
    } else left.push(change)
  }
  return left
}

export class ChangeLog {
  /** The last log entry accounted for, per node. */
  private seen: number[]
  private stale = false
  /** Statements run, for the report. */
  reads = 0

  /** The last entry announced by NOTIFY (PGlite, one node), or null when changes are not announced. */
  private latest: number | null

  constructor(
    /** One per node whose log is read. */
    private readonly readers: readonly Reader[],
    /** The tables watched. */
    readonly tables: readonly Table[],
    announces: boolean,
    private readonly release: () => Promise<void> = async () => {},
  ) {
    this.seen = readers.map(() => 0)
    this.latest = announces ? 0 : null
  }

  /** A committed change was logged (PGlite delivers this before the committing call returns). */
  announced(seq: number): void {
    this.latest = Math.max(this.latest ?? 0, seq)
  }

  /** Accounts for every change so far (after a success, or the suite's own writes). */
  async mark(): Promise<void> {
    if (this.latest !== null) {
      this.seen = [this.latest]
      this.stale = false
      return
    }
    this.reads += this.readers.length
    this.seen = await Promise.all(
      this.readers.map(async (read) => Number((await read('select coalesce(max(seq), 0)::text as seq from fuzz_changes where seq >= $1', 0))[0]!.seq)),
    )
    this.stale = false
  }

  /** The next `settle` starts from the then-current end of the log. */
  forget(): void {
    this.stale = true
  }

  /** Makes sure changes made before the request about to be sent are accounted for. */
  async baseline(): Promise<void> {
    if (this.stale) await this.mark()
  }

  /**
   * The net changes since the last mark, except in `allowed` tables; then everything up to now is
   * accounted for. Changes a handler makes after its response (freeing an Idempotency-Key) get up
   * to `settleMs` to arrive and cancel out.
   */
  async since(allowed: readonly Table[] = [], settleMs = 250): Promise<Change[]> {
    const deadline = Date.now() + settleMs
    const readUpTo = [...this.seen]
    let changes: Change[] = []
    for (;;) {
      // With announcements, the log is read only when something was written.
      if (this.latest === null || this.latest > readUpTo[0]!) {
        this.reads += this.readers.length
        // Ordered by the number: `order by seq` would sort the text alias ("99" after "101") and
        // move readUpTo back, so changes already accounted for came round again.
        const logs = await Promise.all(
          this.readers.map((read, node) =>
            read('select seq::text as seq, table_name as "table", op, row_text as "row" from fuzz_changes where seq > $1 order by fuzz_changes.seq', readUpTo[node]!),
          ),
        )
        for (const [node, rows] of logs.entries()) {
          const more = rows.map((row) => ({ ...(row as Omit<Change, 'seq' | 'node'>), node, seq: Number(row.seq) }))
          changes = changes.concat(more)
          for (const change of more) readUpTo[node] = Math.max(readUpTo[node]!, change.seq)
        }
      }
      const left = netChanges(changes.filter((change) => !allowed.includes(change.table)))
      if (!left.length || Date.now() > deadline) {
        this.seen = readUpTo
        return left
      }
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
  }

  /** Closes the connections to the log's other nodes (Citus workers). */
  close(): Promise<void> {
    return this.release()
  }
}
