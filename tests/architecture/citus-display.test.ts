/**
 * The display call and push enqueue run on one shard (docs/scaling.md, "Citus"): the
 * service runs on a fresh database of a real Citus cluster, `POST /api/component` (all five
 * types, its refusals, the daily limit reached exactly by concurrent grouped calls from two
 * organizations) and `POST /api/message` are called, every statement the service sends meanwhile
 * is captured, and each is EXPLAINed on the coordinator with its parameters: Citus must plan it as
 * one task on one shard (a router query), or on the coordinator alone (`pg_notify`). The exception
 * is the lookup that cannot know the organization yet: the display key's organization by the
 * key's hash, an indexed probe per shard, once per key an instance has not seen.
 *
 * Runs when TEST_CITUS_URL names a Citus coordinator database with its workers added (e.g. made
 * by `cluster.sh createdb`); it makes and drops its own database on every node.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import postgres from 'postgres'
import { DisplayCallsRef } from '../../plugins/display/api'
import { groupStatementOf } from '../../plugins/display/calls/decision'
import { hashSecret } from '../../src/secrets'
import { openDatabase, queryText, type DatabaseHandle } from '../../src/db'
import { createLogger } from '../../src/log'
import { createDisplayFixture, SAMPLE_DATA, type DisplayFixture, type SampleType } from '../helpers/display-fixture'
import { startTestService, type TestService } from '../helpers/service'
import { captureStatements, type CapturedStatement, type StatementCapture } from '../helpers/statement-capture'
import { createClusterDatabase, type ClusterDatabase } from '../helpers/citus-cluster'

const CITUS_URL = process.env.TEST_CITUS_URL

type Statement = CapturedStatement

/**
 * The statements that may span every shard, and why: the display key's organization, looked up
 * by the key's hash before anything names the organization (the hash is unique across
 * organizations), one indexed probe per shard, and only when the instance does not hold the key.
 */
const MAY_SPAN_SHARDS: { name: string; matches: (text: string) => boolean }[] = [
  { name: "display key's organization by hash (key not seen yet)", matches: (text) => /^select organization_id as "organizationId" from display_accounts where key_hash = \$1$/.test(text.trim()) },
]

/**
 * Statements Citus runs as an INSERT … SELECT through the coordinator, and why that is still one
 * shard: the SELECT is one task on the organization's shard, and every row it inserts carries the
 * organization_id it was selected by, so all go to that same shard. (Citus cannot insert them on
 * the shard itself because `deliveries.id` is an identity column: its next value is taken on the
 * coordinator.)
 */
const THROUGH_COORDINATOR: { name: string; matches: (text: string) => boolean }[] = [
  { name: "a message's deliveries, selected from the page's viewers' devices", matches: (text) => /^insert into deliveries\b/.test(text.trim()) && /v\.organization_id = \$\d+::uuid/.test(text) },
]

/** How Citus runs a statement: `tasks` per distributed step (empty: on the coordinator alone). */
export interface Routing {
  statement: Statement
  tasks: number[]
  plan: string
}

/** Statement text with its parameters written in as values (quoted; arrays as array literals). */
function withValues(text: string, parameters: readonly unknown[]): string {
  const quote = (value: string) => `'${value.replace(/'/g, "''")}'`
  const element = (value: unknown): string => (value === null || value === undefined ? 'NULL' : `"${String(value).replace(/(["\\])/g, '\\$1')}"`)
  const literal = (value: unknown): string => {
    if (value === null || value === undefined) return 'NULL'
    if (Array.isArray(value)) return quote(`{${value.map(element).join(',')}}`)
    if (value instanceof Date) return quote(value.toISOString())
    if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return quote(String(value))
    return quote(String(value))
  }
  return text.replace(/\$(\d+)/g, (_, n: string) => literal(parameters[Number(n) - 1]))
}

/**
 * EXPLAINs `statement` with its parameters on the coordinator. Citus plans an INSERT … SELECT that
 * passes through the coordinator only with the parameters written in (with them bound it answers
 * "could not create distributed plan", though it runs the statement), so that one is EXPLAINed so.
 */
async function routingOf(coordinator: postgres.Sql, statement: Statement): Promise<Routing> {
  let rows: { 'QUERY PLAN': string }[]
  try {
    rows = await coordinator.unsafe(`explain (costs off) ${statement.text}`, statement.parameters as never[])
  } catch (error) {
    if (!/could not create distributed plan/.test((error as Error).message)) throw error
    rows = await coordinator.unsafe(`explain (costs off) ${withValues(statement.text, statement.parameters)}`)
  }
  const plan = rows.map((row) => row['QUERY PLAN']).join('\n')
  const tasks = [...plan.matchAll(/Task Count: (\d+)/g)].map((match) => Number(match[1]))
  if (/Custom Scan \(Citus/.test(plan) && !tasks.length) throw new Error(`a Citus plan without a task count:\n${plan}`)
  return { statement, tasks, plan }
}

/**
 * One task (or none: the coordinator alone), no step planned apart (a subplan runs its own tasks
 * first), and no rows passing through the coordinator unless the statement is one of THROUGH_COORDINATOR.
 */
export function singleShard(routing: Routing): boolean {
  if (!routing.tasks.every((count) => count === 1) || /Distributed Subplan/.test(routing.plan)) return false
  return !/INSERT\/SELECT method: (pull to coordinator|repartition)/.test(routing.plan) || THROUGH_COORDINATOR.some((allowed) => allowed.matches(routing.statement.text))
}

/** The statements of `routings` that span shards and are not allowed to, described. */
function offending(routings: readonly Routing[]): string[] {
  return routings
    .filter((routing) => !singleShard(routing) && !MAY_SPAN_SHARDS.some((allowed) => allowed.matches(routing.statement.text)))
    .map((routing) => `${oneLine(routing.statement.text)}\n  tasks ${routing.tasks.join(', ')}\n${routing.plan}`)
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim()

describe('the routing check (without a cluster)', () => {
  const statement = { text: 'select 1', parameters: [] }
  test('one task, or none, is one shard; many tasks, a subplan, or rows through the coordinator are not', () => {
    expect(singleShard({ statement, tasks: [], plan: 'Result' })).toBe(true)
    expect(singleShard({ statement, tasks: [1], plan: 'Custom Scan (Citus Adaptive)\n  Task Count: 1' })).toBe(true)
    expect(singleShard({ statement, tasks: [32], plan: 'Custom Scan (Citus Adaptive)\n  Task Count: 32' })).toBe(false)
    expect(singleShard({ statement, tasks: [1, 1], plan: 'Custom Scan (Citus Adaptive)\n  ->  Distributed Subplan 1_1\n  Task Count: 1' })).toBe(false)
    const pulled = 'Custom Scan (Citus INSERT ... SELECT)\n  INSERT/SELECT method: pull to coordinator\n  ->  Custom Scan (Citus Adaptive)\n        Task Count: 1'
    expect(singleShard({ statement: { text: 'insert into messages select …', parameters: [] }, tasks: [1], plan: pulled })).toBe(false)
    const deliveries = { text: 'insert into deliveries (message_id) select $1::uuid from page_viewers v where v.organization_id = $2::uuid', parameters: [] }
    expect(singleShard({ statement: deliveries, tasks: [1], plan: pulled })).toBe(true)
  })

  test('parameters written in as values: quoted, arrays as array literals, NULL', () => {
    expect(withValues('select $1::text[], $2, $10, $3', ['a"b', "it's", null, 4, 5, 6, 7, 8, 9, 10].map((value, i) => (i === 0 ? ['x', value, null] : value)))).toBe(
      `select '{"x","a\\"b",NULL}'::text[], 'it''s', '10', NULL`,
    )
  })
})

const CLUSTER = CITUS_URL ? 'the display call on a Citus cluster' : 'the display call on a Citus cluster (skipped: set TEST_CITUS_URL to a Citus coordinator database)'
describe.skipIf(!CITUS_URL)(CLUSTER, () => {
  const name = `wt_citus_display_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`
  let cluster: ClusterDatabase
  let handle: DatabaseHandle
  let api: TestService
  let capture: StatementCapture
  let coordinator: postgres.Sql
  let fx: DisplayFixture
  /** A second organization's dashboard, so the shards hold more than one organization's rows and groups meet two. */
  let other: DisplayFixture
  /** Every statement seen, for the summary. */
  const seen: { path: string; routing: Routing }[] = []

  beforeAll(async () => {
    cluster = await createClusterDatabase(CITUS_URL!, name)
    handle = await openDatabase(cluster.url, { maxConnections: 6 })
    // No push workers: their discovery reads every shard on its own schedule, and this file judges
    // the statements of the display calls (tests/architecture/citus-background.test.ts: the workers').
    api = await startTestService({ database: { ...handle, url: cluster.url }, plugins: ['auth', 'users', 'teams', 'display', 'account', 'push'], config: { push: { workers: false } }, log: createLogger('silent') })
    coordinator = postgres(cluster.url, { max: 1, onnotice: () => {} })
    fx = await createDisplayFixture(api)
    other = await createDisplayFixture(api)
    capture = captureStatements(api.service.core.db)
  }, 180_000)

  afterAll(async () => {
    capture?.release()
    await coordinator?.end()
    await api?.stop()
    await handle?.close()
    await cluster?.drop()
    if (seen.length)
      console.log(
        `display call → statement → tasks\n${[...new Map(seen.map((entry) => [`${entry.path} ${oneLine(entry.routing.statement.text)}`, entry])).values()]
          .map(({ path, routing }) => `${path} → ${oneLine(routing.statement.text).slice(0, 140)} → ${routing.tasks.length ? routing.tasks.join('+') : 'coordinator'}`)
          .join('\n')}`,
      )
  }, 120_000)

  /**
   * Runs each of `paths` in turn and EXPLAINs every statement it sent; returns those that span
   * shards without being allowed to (or that Citus would not plan), each under its path's name.
   */
  async function spanningStatements(paths: Record<string, () => Promise<unknown>>): Promise<string[]> {
    const problems: string[] = []
    for (const [path, work] of Object.entries(paths)) {
      const statements = await capture.during(() => work().catch((error: Error) => problems.push(`${path}: ${error.message}`)))
      if (!statements.length) problems.push(`${path}: no statement captured`)
      for (const statement of statements) {
        const routing = await routingOf(coordinator, statement).catch((error: Error) => {
          problems.push(`${path}: Citus refused ${oneLine(statement.text)}: ${error.message}`)
        })
        if (!routing) continue
        seen.push({ path, routing })
        problems.push(...offending([routing]).map((problem) => `${path}: ${problem}`))
      }
    }
    return problems
  }

  const component = (dashboard: DisplayFixture, type: SampleType, timestamp: number, apiKey = dashboard.creator.displayApiKey) =>
    api.request('POST', '/api/component', { body: { componentId: dashboard.components[type], apiKey, timestamp, data: SAMPLE_DATA[type] } })

  const expectStatus = async (answer: Promise<{ status: number; text: string }>, status: number) => {
    const { status: got, text } = await answer
    if (got !== status) throw new Error(`expected ${status}, got ${got}: ${text}`)
  }

  test('POST /api/component of every type, and its refusals, run on one shard but for the key lookup on its first call', async () => {
    const types = Object.keys(SAMPLE_DATA) as SampleType[]
    const probes = () => api.service.core.services.get(DisplayCallsRef).groupStats()
    const before = probes().statements
    const paths: Record<string, () => Promise<unknown>> = {}
    for (const [i, type] of types.entries()) paths[`update ${type}`] = () => expectStatus(component(fx, type, 1000 + i), 200)
    Object.assign(paths, {
      'stale update (409)': () => expectStatus(component(fx, 'barChart', 1), 409),
      "a viewer's update (403)": () => expectStatus(component(fx, 'barChart', 2000, fx.reader.displayApiKey), 403),
      "another organization's component (404)": () => expectStatus(component(other, 'barChart', 2000, fx.creator.displayApiKey), 404),
      'a refused body, counted (400)': () => expectStatus(api.request('POST', '/api/component', { body: { componentId: fx.components.barChart, apiKey: fx.creator.displayApiKey, timestamp: 1 } }), 400),
    })
    expect(await spanningStatements(paths)).toEqual([])
    expect(probes().statements - before).toBeGreaterThanOrEqual(types.length + 4)
    // The creator's data landed, read back through the coordinator.
    const [stored] = await queryText<{ data: unknown }>(api.service.core.db, 'select data from components where id = $1 and organization_id = $2', [fx.components.pieChart, fx.organizationId])
    expect(stored!.data).toEqual(SAMPLE_DATA.pieChart)
  }, 120_000)

  test('the key lookup spans the shards once per key: later calls name the organization at once', async () => {
    const first = await capture.during(() => expectStatus(component(other, 'lineChart', 10), 200))
    const again = await capture.during(() => expectStatus(component(other, 'lineChart', 11), 200))
    const lookups = (statements: Statement[]) => statements.filter((statement) => MAY_SPAN_SHARDS[0]!.matches(statement.text)).length
    expect([lookups(first), lookups(again)]).toEqual([1, 0])
  }, 60_000)

  test('the daily limit is exact under concurrent grouped calls of two organizations, every statement on one shard', async () => {
    const db = api.service.core.db
    const limit = 40
    for (const dashboard of [fx, other]) {
      await queryText(db, 'delete from display_usage where user_id = $1 and organization_id = $2', [dashboard.creator.id, dashboard.organizationId])
      await queryText(db, 'update display_accounts set daily_limit = $1 where user_id = $2 and organization_id = $3', [limit, dashboard.creator.id, dashboard.organizationId])
    }
    const calls = api.service.core.services.get(DisplayCallsRef)
    const groupedBefore = calls.groupStats().grouped
    const answers: { status: number; headers: Headers; organization: string }[] = []
    const types = Object.keys(SAMPLE_DATA) as SampleType[]
    const problems = await spanningStatements({
      '2 × 100 concurrent calls at a limit of 40': async () => {
        const sent = Array.from({ length: 200 }, (_, i) => {
          const dashboard = i % 2 ? fx : other
          return component(dashboard, types[i % types.length]!, 5000 + i).then((answer) => answers.push({ status: answer.status, headers: answer.headers, organization: dashboard.organizationId }))
        })
        await Promise.all(sent)
      },
    })
    expect(problems).toEqual([])
    expect(calls.groupStats().grouped - groupedBefore).toBeGreaterThan(0)
    for (const dashboard of [fx, other]) {
      const mine = answers.filter((answer) => answer.organization === dashboard.organizationId)
      const counted = mine.filter((answer) => answer.status === 200 || answer.status === 409)
      expect([counted.length, mine.filter((answer) => answer.status === 429).length]).toEqual([limit, 100 - limit])
      const remaining = counted.map((answer) => Number(answer.headers.get('x-ratelimit-remaining'))).sort((a, b) => a - b)
      expect(remaining).toEqual(Array.from({ length: limit }, (_, i) => i))
      const [usage] = await queryText<{ calls: number }>(db, 'select calls from display_usage where user_id = $1 and organization_id = $2', [dashboard.creator.id, dashboard.organizationId])
      expect(usage!.calls).toBe(limit)
    }
  }, 180_000)

  test('POST /api/message records the message and its deliveries on one shard, and its report reads there', async () => {
    const db = api.service.core.db
    await queryText(db, 'update display_accounts set daily_limit = 1000 where user_id = $1 and organization_id = $2', [fx.creator.id, fx.organizationId])
    // The reader's phone (a viewer receives the page's messages), written directly: registering devices is not the display call.
    await queryText(db, `insert into devices (token, user_id, organization_id, platform) values ($1, $2, $3, 'android')`, [`citus-${randomBytes(6).toString('hex')}`, fx.reader.id, fx.organizationId])
    let messageId = ''
    const problems = await spanningStatements({
      'POST /api/message': async () => {
        const sent = await api.request('POST', '/api/message', { body: { apiKey: fx.creator.displayApiKey, pageName: fx.pageName, message: 'Shipped' } })
        if (sent.status !== 200) throw new Error(`${sent.status} ${sent.text}`)
        messageId = sent.headers.get('x-message-id')!
      },
      'POST /api/message by a viewer (403)': () => expectStatus(api.request('POST', '/api/message', { body: { apiKey: fx.reader.displayApiKey, pageName: fx.pageName, message: 'Hi' } }), 403),
      'POST /api/message to an unknown page (404)': () => expectStatus(api.request('POST', '/api/message', { body: { apiKey: fx.creator.displayApiKey, pageName: 'no-such-page', message: 'Hi' } }), 404),
      'POST /api/message with a refused body (400)': () => expectStatus(api.request('POST', '/api/message', { body: { apiKey: fx.creator.displayApiKey, pageName: fx.pageName } }), 400),
    })
    expect(problems).toEqual([])
    const report = await api.request('GET', `/api/v1/pages/${fx.pageId}/messages/${messageId}`, { key: fx.creatorKey })
    expect([report.status, report.body.data?.targeted, report.body.data?.undelivered]).toEqual([200, 1, 1])
  }, 120_000)

  test('the check fails a display statement that lost its organization filter, and a group of two organizations', async () => {
    const count = (await capture.during(() => expectStatus(api.request('POST', '/api/component', { body: { componentId: fx.components.barChart, apiKey: fx.creator.displayApiKey, timestamp: 1 } }), 400))).find((statement) =>
      /update display_usage/.test(statement.text),
    )!
    expect(offending([await routingOf(coordinator, count)])).toEqual([])
    // The same statement with its account read by key alone: Citus cannot place it on one shard (it plans it across every shard, or refuses it).
    const unfiltered = { ...count, text: count.text.replace('where a.key_hash = $1 and a.organization_id = $2', 'where a.key_hash = $1') }
    expect(unfiltered.text).not.toBe(count.text)
    const routing = await routingOf(coordinator, unfiltered).catch((error: Error) => error)
    if (routing instanceof Error) expect(routing.message).toMatch(/complex joins|could not|not supported/)
    else expect(offending([routing])).toHaveLength(1)
    // The statement plain PostgreSQL uses for a group of several organizations spans their shards: on Citus groups are per organization.
    const data = JSON.stringify(SAMPLE_DATA.barChart)
    const group = groupStatementOf(
      [
        { key: fx.creator.displayApiKey!, organizationId: fx.organizationId, componentId: fx.components.barChart },
        { key: other.creator.displayApiKey!, organizationId: other.organizationId, componentId: other.components.barChart },
      ].map(({ key, organizationId, componentId }) => ({ call: { keyHash: hashSecret(key), update: { componentId, data, timestamp: 1, type: 'barChart' } }, organizationId })),
    )
    const across = await routingOf(coordinator, { text: group.text, parameters: group.values }).catch((error: Error) => error)
    if (across instanceof Error) expect(across.message).toMatch(/complex joins|could not|not supported/)
    else expect(offending([across])).toHaveLength(1)
    const usage = await routingOf(coordinator, { text: 'select calls from display_usage where user_id = $1', parameters: [fx.creator.id] })
    expect(offending([usage])).toHaveLength(1)
    expect(usage.tasks[0]).toBeGreaterThan(1)
  }, 60_000)
})
