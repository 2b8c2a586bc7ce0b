/**
 * Triggers a test puts on the service's tables, on PGlite, PostgreSQL and a Citus cluster alike.
 *
 * On Citus a trigger on a distributed or reference table is refused unless
 * `citus.enable_unsafe_triggers` is on when it is created or dropped. It then runs on the shards,
 * on the workers (a reference table's on every node that holds a copy, the coordinator included),
 * where TG_TABLE_NAME is a shard's name (`api_keys_102008`) and the function can write only that
 * node's own tables: not a distributed or reference one. So a function that records something
 * writes a plain table or sequence made on every node (`onEveryNode`), and the test reads it
 * back from every node (`nodes`, `fromEveryNode`). The function itself is created as usual, on
 * the database: Citus copies it to the workers. Off Citus the database is the only node.
 */
import postgres from 'postgres'
import { queryText } from '../../src/db'
import { hasCitus } from '../../src/citus'
import type { TestDatabase } from './database'

/** In a trigger function installed by `createTrigger`: the service table's name (TG_TABLE_NAME may be a shard's). */
export const TRIGGER_TABLE = 'tg_argv[0]'
/** The second argument: the group of the node whose copy of a reference table's row acts, or ''. */
const ACTING_COPY = 'tg_argv[1]'

export interface TriggerDefinition {
  name: string
  /** When it fires, e.g. `after insert or update or delete`, `before insert`. */
  timing: string
  table: string
  /** A condition on OLD and NEW (`when (…)`), or none. */
  condition?: string
  /** The trigger function's name; it is called with the table's name (`TRIGGER_TABLE`) and the acting copy (`oneCopy`). */
  function: string
}

/** One node of the test database: the database itself, or on Citus the coordinator or a worker's copy. */
export interface TestNode {
  /** 0 for the database (the coordinator on Citus), then each worker. */
  index: number
  query<Row = Record<string, unknown>>(text: string, parameters?: unknown[]): Promise<Row[]>
}

export interface TestTriggers {
  /** Whether the database is a Citus coordinator (its triggers run on the workers). */
  citus: boolean
  /** Every node a trigger may run on, the database first. */
  nodes: readonly TestNode[]
  /**
   * PL/pgSQL for the start of a trigger function that must act once per row: on Citus every copy
   * of a reference table's row fires the trigger, and this returns at once on all but one of them
   * (as the trigger would, so a `before` trigger lets the row through). Empty off Citus.
   */
  oneCopy: string
  /** Runs each statement on every node, on its own (Citus propagates nothing from them): the tables and sequences a trigger function writes. */
  onEveryNode(...statements: string[]): Promise<void>
  /** A read run on every node, one list of rows per node. */
  fromEveryNode<Row = Record<string, unknown>>(text: string, parameters?: unknown[]): Promise<Row[][]>
  createTrigger(trigger: TriggerDefinition): Promise<void>
  dropTrigger(name: string, table: string): Promise<void>
  /** Closes the connections to the workers (none off Citus). */
  close(): Promise<void>
}

/** The nodes of `database` and the means to put triggers on its tables; `close()` when done. */
export async function testTriggers(database: TestDatabase): Promise<TestTriggers> {
  const { db } = database
  const citus = !database.pglite && (await hasCitus(db))
  const workers: postgres.Sql[] = []
  if (citus) {
    const rows = await queryText<{ host: string; port: number }>(
      db,
      `select nodename as host, nodeport as port from pg_dist_node where groupid > 0 and isactive and noderole = 'primary' order by groupid`,
      [],
    )
    for (const row of rows) {
      const url = new URL(database.url)
      url.hostname = row.host
      url.port = String(row.port)
      workers.push(postgres(url.toString(), { max: 2, onnotice: () => {} }))
    }
  }
  const nodes: TestNode[] = [
    { index: 0, query: <Row>(text: string, parameters: unknown[] = []) => queryText<Row>(db, text, parameters) },
    ...workers.map((client, index) => ({
      index: index + 1,
      query: async <Row>(text: string, parameters: unknown[] = []) => (await client.unsafe(text, parameters as postgres.ParameterOrJSON<never>[], { prepare: true })) as unknown as Row[],
    })),
  ]

  /** Runs `statement` on the coordinator, `setting` on for its transaction. */
  const withSetting = (setting: string, statement: string) =>
    db.transaction(async (tx) => {
      await queryText(tx, `set local ${setting}`, [])
      await queryText(tx, statement, [])
    })
  const unsafeTriggers = async (statement: string) => {
    if (citus) await withSetting('citus.enable_unsafe_triggers = on', statement)
    else await queryText(db, statement, [])
  }

  return {
    citus,
    nodes,
    oneCopy: citus
      ? `if ${ACTING_COPY} <> '' and ${ACTING_COPY}::int <> (select groupid from pg_catalog.pg_dist_local_group) then
           if tg_op = 'DELETE' then return old; end if;
           return new;
         end if;`
      : '',
    async onEveryNode(...statements) {
      for (const statement of statements) {
        if (!citus) {
          await queryText(db, statement, [])
          continue
        }
        await withSetting('citus.enable_ddl_propagation = off', statement)
        for (const worker of workers)
          await worker.begin(async (tx) => {
            await tx.unsafe('set local citus.enable_ddl_propagation = off')
            await tx.unsafe(statement)
          })
      }
    },
    fromEveryNode: <Row>(text: string, parameters: unknown[] = []) => Promise.all(nodes.map((node) => node.query<Row>(text, parameters))),
    async createTrigger({ name, timing, table, condition, function: fn }) {
      // A reference table's copies all fire: the one on the lowest group acts (`oneCopy`).
      const [copy] = citus
        ? await queryText<{ group: number | null }>(
            db,
            `select min(placement.groupid) as "group"
               from pg_dist_partition partition
               join pg_dist_shard shard on shard.logicalrelid = partition.logicalrelid
               join pg_dist_placement placement on placement.shardid = shard.shardid
              where partition.logicalrelid = $1::regclass and partition.repmodel = 't'`,
            [`public."${table}"`],
          )
        : []
      await unsafeTriggers(
        `create trigger "${name}" ${timing} on "${table}" for each row ${condition ? `when (${condition})` : ''} execute function ${fn}('${table}', '${copy?.group ?? ''}')`,
      )
    },
    dropTrigger: (name, table) => unsafeTriggers(`drop trigger "${name}" on "${table}"`),
    async close() {
      await Promise.all(workers.map((worker) => worker.end()))
    },
  }
}
