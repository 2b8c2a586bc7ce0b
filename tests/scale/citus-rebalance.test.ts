/**
 * The cluster changes under the service (docs/scaling.md), on a private Citus
 * cluster of private PostgreSQL servers (tests/helpers/private-citus.ts): the shared servers and
 * the cluster TEST_CITUS_URL names are never touched.
 *
 * A node added under load: two service processes on a 2-worker cluster under the mixed load; a
 * third worker joins and `citus_rebalance_start()` moves shard groups to it (logical replication)
 * while a ledger of writes and a run of display calls go to an organization whose shard group
 * moves. No 5xx, no transport error; every write answered 2xx is read back afterwards (the
 * ledger's one by one, the load's by count); the display daily limit stays exact through the
 * move of its counter's shard.
 *
 * A worker stopped for 10 s and started again: the organization whose shards it holds gets 503
 * with Retry-After (or a correct answer from a cache), never a 500 or a wrong answer; an
 * organization on another worker keeps working with its credentials cached (a key first seen
 * during the outage is looked up on every shard, so it waits for the worker); both recover,
 * without restarting the service, once the worker is back.
 *
 * Runs when TEST_CITUS_URL is set (CI's sign that Citus is installed on this machine).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { setDailyLimit } from '../../plugins/display/calls/accounts'
import { openDatabase, type DatabaseHandle } from '../../src/db'
import { SAMPLE_DATA } from '../helpers/display-fixture'
import { startInstance, type Instance } from '../helpers/instance'
import { privateCitusUnavailable, startPrivateCitus, type PrivateCitus } from '../helpers/private-citus'
import { startTestService, type TestService, type TestUser } from '../helpers/service'
import { waitLimit } from '../helpers/time'
import { call, expectCall, type Exchange } from './cluster'
import { startMixedLoad, type LoadReport } from './load'

/** Fewer shard groups than Citus's 32: a group move takes ~7 s here however small, and two moves prove what ten would. */
const SHARD_COUNT = 8
const DAILY_LIMIT = 30
const REBALANCE_DEADLINE_MS = waitLimit(150_000)
const OUTAGE_MS = 10_000
const RECOVERY_DEADLINE_MS = 30_000
/** The key cache keeps its default TTL (30 s): longer than the outage, as in production. */
const INSTANCE_CONFIG = { auth: { passwordHashLogN: 10 }, database: { maxConnections: 6 }, push: { workers: false } }

const skipReason = process.env.TEST_CITUS_URL ? privateCitusUnavailable() : 'set TEST_CITUS_URL to say Citus is installed here'
const TITLE = `a Citus cluster changing under the service${skipReason ? ` (skipped: ${skipReason})` : ''}`

/** An organization's administrator (every scope), a project with a known work item, a display page with a bar chart. */
interface Tenant {
  organizationId: string
  user: TestUser
  key: string
  projectId: string
  item: { id: string; title: string }
  page: { id: string; name: string }
  componentId: string
}

describe.skipIf(!!skipReason)(TITLE, () => {
  let cluster: PrivateCitus
  let handle: DatabaseHandle
  let seed: TestService
  let instances: Instance[] = []
  let observer: postgres.Sql
  let labels = 0

  beforeAll(async () => {
    const started = performance.now()
    cluster = await startPrivateCitus({ workers: 2, settings: { 'citus.shard_count': SHARD_COUNT } })
    const url = await cluster.createDatabase('wt_rebalance')
    handle = await openDatabase(url, { maxConnections: 4 })
    // The seed service migrates and places the schema, then the instances start on it.
    seed = await startTestService({ database: { ...handle, url }, config: { push: { workers: false } } })
    instances = await Promise.all(['i0', 'i1'].map((name) => startInstance({ name, databaseUrl: url, config: INSTANCE_CONFIG })))
    observer = postgres(url, { max: 2, onnotice: () => {} })
    console.log(`private cluster (coordinator ${cluster.coordinator.port}, workers ${cluster.workers.map((w) => w.port).join(', ')}) placed, 2 instances up in ${since(started)} ms`)
  }, 120_000)

  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.stop()))
    await seed?.stop()
    await handle?.close()
    await observer?.end({ timeout: 1 })
    await cluster?.destroy()
  }, 60_000)

  /** Runs `body`; on failure prints the tail of every instance's log before rethrowing. */
  async function diagnosed<T>(body: () => Promise<T>): Promise<T> {
    try {
      return await body()
    } catch (error) {
      for (const instance of instances) console.error(`--- ${instance.name} stderr tail:\n${instance.output().slice(-4000) || '(empty)'}`)
      throw error
    }
  }

  async function createTenant(organizationId?: string): Promise<Tenant> {
    const label = `t${labels++}`
    organizationId ??= await seed.createOrganization(`Rebalance ${label}`)
    const user = await seed.createUser(organizationId, 'administrator')
    const key = (await seed.createKey(user.id, seed.service.core.scopes.map((scope) => scope.name))).secret
    const via = instances[labels % instances.length]!
    const post = async (path: string, body: unknown) => (await expectCall(via, 201, 'POST', path, { bearer: key, body })).body.data
    const projectId = (await post('/api/v1/projects', { name: label })).id
    const title = `${label} known item`
    const item = { id: (await post(`/api/v1/projects/${projectId}/work-items`, { title })).id as string, title }
    const page = { id: (await post('/api/v1/pages', { name: `${label}-board` })).id as string, name: `${label}-board` }
    const componentId = (await post(`/api/v1/pages/${page.id}/components`, { type: 'barChart', title: 'bars' })).id
    return { organizationId, user, key, projectId, item, page, componentId }
  }

  const shardOf = async (organizationId: string): Promise<string> =>
    (await observer`select get_shard_id_for_distribution_column('users', ${organizationId}::uuid)::text as shard`)[0]!.shard

  /** The port of the worker holding the organization's shard group. */
  const workerOf = async (organizationId: string): Promise<number> =>
    Number((await observer`select nodeport from citus_shards where shardid = ${await shardOf(organizationId)}::bigint`)[0]!.nodeport)

  /** The state of the job's task moving the shard group that holds any of `shards`. */
  async function moveState(job: number, shards: Set<string>): Promise<string | undefined> {
    const tasks = await observer`select status::text, command from pg_dist_background_task where job_id = ${job}`
    return tasks.find((task) => shards.has(/citus_move_shard_placement\((\d+)/.exec(task.command)?.[1] ?? ''))?.status
  }

  /** Display calls of the tenant's account through both instances, from the start of its shard group's move to its end. */
  async function callsDuringMove(tenant: Tenant, state: () => Promise<string | undefined>) {
    const deadline = performance.now() + REBALANCE_DEADLINE_MS
    let current = await state()
    while (current !== 'running' && current !== 'done' && performance.now() < deadline) current = await Bun.sleep(20).then(state)
    if (current !== 'running') throw new Error(`the move of the limited account's shard group was not seen running (${current})`)
    const began = performance.now()
    const calls: Exchange[] = []
    let moving = true
    const watch = async () => {
      while (moving) moving = (await Bun.sleep(50).then(state)) === 'running' && performance.now() < deadline
    }
    const caller = async (n: number) => {
      for (let i = 0; moving; i++) calls.push(await displayCall(instances[(n + i) % instances.length]!, tenant, i % 2 ? 'message' : 'component'))
    }
    await Promise.all([watch(), caller(0), caller(1)])
    return { calls, moveMs: since(began) }
  }

  test(
    'a worker added and shards rebalanced under load: no 5xx, every acknowledged write readable, the daily limit exact',
    () =>
      diagnosed(async () => {
        const loadTenant = await createTenant()
        const viewer = await seed.createUser(loadTenant.organizationId, 'member')
        const viewerKey = (await seed.createKey(viewer.id, seed.service.core.scopes.map((scope) => scope.name))).secret
        await expectCall(instances[1]!, 201, 'POST', `/api/v1/projects/${loadTenant.projectId}/members`, { bearer: loadTenant.key, body: { userId: viewer.id, accessLevel: 'viewer' } })
        // The load updates a vertical box (its sample data is one).
        const box = await expectCall(instances[0]!, 201, 'POST', `/api/v1/pages/${loadTenant.page.id}/components`, { bearer: loadTenant.key, body: { type: 'verticalBox', title: 'box' } })
        const target = { instances, projectId: loadTenant.projectId, editorKey: loadTenant.key, viewerKey, displayKey: loadTenant.user.displayApiKey!, componentId: box.body.data.id }
        const load = await startMixedLoad(target, 4)
        let report: LoadReport | undefined
        let ledger: ReturnType<typeof startLedger> | undefined
        try {
          const adding = performance.now()
          const worker = await cluster.addWorker()
          console.log(`worker ${worker.port} added under load in ${since(adding)} ms`)

          // The shard groups the rebalancer will move: an organization in one of them gets the ledger and the limited account.
          const plan = await observer`select shardid::text from get_rebalance_table_shards_plan() where table_name = 'users'::regclass`
          const moving = new Set(plan.map((row) => row.shardid as string))
          let mover: Tenant | undefined
          for (let attempt = 0; attempt < 40 && !mover; attempt++) {
            const organizationId = await seed.createOrganization(`Rebalance candidate ${attempt}`)
            if (moving.has(await shardOf(organizationId))) mover = await createTenant(organizationId)
          }
          if (!mover) throw new Error(`no organization landed in a shard group the plan moves (${plan.length} groups)`)
          await setDailyLimit(seed.service.core.db, mover.user.id, DAILY_LIMIT)
          const moverShards = new Set(
            (await observer`select get_shard_id_for_distribution_column(logicalrelid, ${mover.organizationId}::uuid)::text as shard from pg_dist_partition where partmethod = 'h'`).map((row) => row.shard as string),
          )
          console.log(`plan: ${plan.length} shard groups to move; the load's organization's ${moving.has(await shardOf(loadTenant.organizationId)) ? 'moves' : 'stays'}, the ledger's moves`)

          const rebalancing = performance.now()
          const job = Number((await observer`select citus_rebalance_start() as job`)[0]!.job)
          ledger = startLedger(instances, mover)
          const limited = await callsDuringMove(mover, () => moveState(job, moverShards))
          let state = 'running'
          while (['scheduled', 'running', 'cancelling'].includes(state)) {
            if (performance.now() - rebalancing > REBALANCE_DEADLINE_MS) throw new Error(`rebalance still ${state} after ${REBALANCE_DEADLINE_MS} ms`)
            state = (await Bun.sleep(100).then(() => observer`select state::text from citus_rebalance_status()`))[0]!.state
          }
          const rebalanceMs = since(rebalancing)
          const written = await ledger.stop()
          report = await load.stop()
          expect(state).toBe('finished')

          const [moved] = await observer`select count(distinct shardid)::int as shards from citus_shards where nodeport = ${worker.port} and citus_table_type = 'distributed'`
          // The job also copies the reference tables to the new worker first (one more task).
          const [tasks] = await observer`
            select count(*) filter (where command like '%citus_move_shard_placement%')::int as moves, count(*)::int as tasks
              from pg_dist_background_task where job_id = ${job} and status = 'done'`
          console.log(`rebalance: ${tasks!.tasks} tasks, ${tasks!.moves} shard-group moves (${moved!.shards} shards of distributed tables) to the new worker in ${rebalanceMs} ms, under load`)
          console.log(`mixed load: ${report.total} operations in ${report.seconds.toFixed(1)} s, by status ${JSON.stringify(byStatus(report))}`)
          for (const [name, op] of Object.entries(report.operations)) console.log(`  ${name}: ${op.count} × ${JSON.stringify(op.statuses)}, p50 ${op.p50Ms} ms, max ${op.maxMs} ms`)
          console.log(`ledger: ${written.items.length} items, ${written.entries.length} entries, ${written.patches} patches acknowledged; by status ${JSON.stringify(written.statuses)}`)
          const count = (status: number) => limited.calls.filter((c) => c.status === status).length
          console.log(`limit ${DAILY_LIMIT}: ${limited.calls.length} display calls during its shard group's move (${limited.moveMs} ms): ${count(200)} × 200, ${count(429)} × 429`)

          expect(moved!.shards).toBeGreaterThan(0)
          expect(tasks!.moves).toBe(plan.length)
          expect(await workerOf(mover.organizationId)).toBe(worker.port)
          expect(report.failures.slice(0, 20)).toEqual([])
          expect(report.serverErrors).toBe(0)
          expect(written.failures.slice(0, 20)).toEqual([])

          await readBack(instances, mover, written)
          // The load's writes, by count: with no failure, each row is one answered 2xx (plus the tenant's known item and the load's seed item).
          const acknowledged = (name: string, status: number) => report!.operations[name]?.statuses[status] ?? 0
          const [rows] = await observer`
            select (select count(*)::int from work_items where organization_id = ${loadTenant.organizationId}) as items,
                   (select count(*)::int from entries where organization_id = ${loadTenant.organizationId}) as entries`
          expect(rows!.items).toBe(2 + acknowledged('v1 create work item', 201) + acknowledged('mcp create_work_item', 200))
          expect(rows!.entries).toBe(acknowledged('v1 create entry', 201) + acknowledged('mcp create_entry', 200))

          // Called past the limit during the move: exactly DAILY_LIMIT calls counted, each at its own position.
          const succeeded = limited.calls.filter((c) => c.status === 200)
          expect(limited.calls.filter((c) => c.status !== 200 && c.status !== 429).map((c) => `${c.status} ${c.text.slice(0, 200)}`).slice(0, 20)).toEqual([])
          expect(limited.calls.length).toBeGreaterThan(DAILY_LIMIT)
          expect(succeeded).toHaveLength(DAILY_LIMIT)
          expect(succeeded.map((c) => Number(c.headers.get('x-ratelimit-used'))).sort((a, b) => a - b)).toEqual(Array.from({ length: DAILY_LIMIT }, (_, i) => i + 1))
          const [usage] = await observer`select coalesce(sum(calls), 0)::int as calls from display_usage where user_id = ${mover.user.id} and organization_id = ${mover.organizationId}`
          expect(usage!.calls).toBe(DAILY_LIMIT)
          for (const instance of instances) expect((await displayCall(instance, mover, 'component')).status).toBe(429)
        } finally {
          await ledger?.stop()
          if (!report) await load.stop().catch(() => {})
        }
      }),
    REBALANCE_DEADLINE_MS + 60_000,
  )

  test(
    'a worker stopped for 10 s: its organization gets 503 with Retry-After, another keeps working, both recover without a restart',
    () =>
      diagnosed(async () => {
        // Two organizations whose shard groups sit on different workers.
        const down = await createTenant()
        const downPort = await workerOf(down.organizationId)
        let up: Tenant | undefined
        for (let attempt = 0; attempt < 20 && !up; attempt++) {
          const candidate = await createTenant()
          if ((await workerOf(candidate.organizationId)) !== downPort) up = candidate
        }
        if (!up) throw new Error('no organization landed on another worker')
        const live = up
        const stopped = cluster.workers.findIndex((worker) => worker.port === downPort)
        // Credentials of the live organization that no instance has seen: each looked up by its hash alone, on every shard.
        const coldKey = (await seed.createKey(live.user.id, ['users:read'])).secret
        const coldDisplay = { ...live, user: await seed.createUser(live.organizationId, 'administrator') }

        const answers: Answer[] = []
        const round = async (phase: Phase) => {
          const results = (await Promise.all(instances.flatMap((instance) => [probe(instance, down, phase), probe(instance, live, phase)]))).flat()
          answers.push(...results)
          return results
        }
        // Warm: every probe through every instance, so each holds both organizations' keys.
        for (const answer of await round('before')) expect(answer).toMatchObject({ verdict: 'ok' })

        let outage = true
        const during = (async () => {
          while (outage) await round('outage')
        })()
        const stopping = performance.now()
        let stoppedAt = stopping
        let cold: Exchange, coldCall: Exchange, raised: string
        try {
          await cluster.stopWorker(stopped)
          stoppedAt = performance.now()
          cold = await call(instances[0]!, 'GET', '/api/v1/users/me', { bearer: coldKey })
          coldCall = await displayCall(instances[1]!, coldDisplay, 'component')
          // What the coordinator raises for a statement that needs the stopped worker (the service maps its SQLSTATE to 503).
          raised = await observer`select count(*) from work_items where organization_id = ${down.organizationId}`.then(
            () => 'nothing: the statement was answered',
            (error: postgres.PostgresError) => `${error.code} ${error.message}`,
          )
          while (performance.now() - stoppedAt < OUTAGE_MS) await Bun.sleep(50)
        } finally {
          outage = false
          await during
        }
        await cluster.startWorker(stopped)
        const restarted = performance.now()
        let recoveryMs = Infinity
        while (performance.now() - restarted < RECOVERY_DEADLINE_MS) {
          if ((await round('recovery')).every((answer) => answer.verdict === 'ok')) {
            recoveryMs = since(restarted)
            break
          }
        }
        const coldAfter = await call(instances[0]!, 'GET', '/api/v1/users/me', { bearer: coldKey })
        const coldCallAfter = await displayCall(instances[1]!, coldDisplay, 'component')

        const tally = (tenant: Tenant, phase: Phase) => {
          const counts: Record<string, number> = {}
          for (const a of answers.filter((a) => a.organizationId === tenant.organizationId && a.phase === phase)) counts[`${a.probe} ${a.status}`] = (counts[`${a.probe} ${a.status}`] ?? 0) + 1
          return counts
        }
        console.log(`worker ${downPort} stopped (fast) in ${Math.round(stoppedAt - stopping)} ms, down ${OUTAGE_MS} ms; all answers 2xx again ${recoveryMs} ms after it was back`)
        console.log(`  the coordinator raised: ${raised}`)
        console.log(`  its organization during the outage: ${JSON.stringify(tally(down, 'outage'))}`)
        console.log(`  the other organization during the outage: ${JSON.stringify(tally(live, 'outage'))}`)
        console.log(`  its organization during recovery: ${JSON.stringify(tally(down, 'recovery'))}`)
        console.log(`  credentials of the other organization first used during the outage: API key ${cold.status} (Retry-After ${cold.headers.get('retry-after')}), after: ${coldAfter.status}; display key ${coldCall.status} (Retry-After ${coldCall.headers.get('retry-after')}), after: ${coldCallAfter.status}`)

        expect(answers.filter((a) => a.verdict === 'wrong').map((a) => `${a.phase} ${a.probe} ${a.status}: ${a.detail}`).slice(0, 20)).toEqual([])
        // The live organization never noticed, stop and start included.
        expect(answers.filter((a) => a.organizationId === live.organizationId && a.verdict !== 'ok').map((a) => `${a.phase} ${a.probe} ${a.status}`).slice(0, 20)).toEqual([])
        // The stopped one was refused (each probe that needs its shards at least once), never failed.
        const refused = answers.filter((a) => a.organizationId === down.organizationId && a.phase === 'outage' && a.verdict === 'unavailable')
        for (const name of ['get item', 'list items', 'create item', 'display call', 'mcp get item']) expect(refused.filter((a) => a.probe === name).length).toBeGreaterThan(0)
        expect(recoveryMs).toBeLessThan(RECOVERY_DEADLINE_MS)
        // A credential first seen during the outage waits for the worker (503) or is answered; never a 500.
        expect(cold.status === 200 || (cold.status === 503 && Number(cold.headers.get('retry-after')) > 0)).toBe(true)
        expect(coldAfter.status).toBe(200)
        // An administrator's display key feeds any page of the organization.
        expect(coldCallAfter.status).toBe(200)
        expect(coldCall.status === coldCallAfter.status || (coldCall.status === 503 && Number(coldCall.headers.get('retry-after')) > 0)).toBe(true)

        // Every create answered 2xx, whenever it was, is there afterwards.
        for (const answer of answers.filter((a) => a.created)) {
          const tenant = answer.organizationId === live.organizationId ? live : down
          const read = await expectCall(instances[1]!, 200, 'GET', `/api/v1/projects/${tenant.projectId}/work-items/${answer.created!.id}`, { bearer: tenant.key })
          expect(read.body.data.title).toBe(answer.created!.title)
        }
      }),
    OUTAGE_MS + RECOVERY_DEADLINE_MS + 60_000,
  )
})

const since = (start: number) => Math.round(performance.now() - start)

function byStatus(report: LoadReport): Record<string, number> {
  const totals: Record<string, number> = {}
  for (const op of Object.values(report.operations)) for (const [status, count] of Object.entries(op.statuses)) totals[status] = (totals[status] ?? 0) + count
  return totals
}

/** One display call of the tenant's account: a component update or a message to its page. */
function displayCall(instance: Instance, tenant: Tenant, kind: 'component' | 'message'): Promise<Exchange> {
  const apiKey = tenant.user.displayApiKey!
  return kind === 'component'
    ? call(instance, 'POST', '/api/component', { body: { componentId: tenant.componentId, apiKey, timestamp: 1_950_000_000, data: SAMPLE_DATA.barChart } })
    : call(instance, 'POST', '/api/message', { body: { apiKey, pageName: tenant.page.name, message: 'limit probe' } })
}

interface Written {
  items: { id: string; title: string }[]
  entries: { id: string; workItemId: string; body: string }[]
  /** The last title a PATCH of the tenant's known item was acknowledged with. */
  lastTitle?: string
  patches: number
  statuses: Record<string, number>
  failures: string[]
}

/** Two loops writing in the tenant's project through both instances, recording every acknowledged write. */
function startLedger(instances: Instance[], tenant: Tenant): { stop(): Promise<Written> } {
  const written: Written = { items: [], entries: [], patches: 0, statuses: {}, failures: [] }
  const items = `/api/v1/projects/${tenant.projectId}/work-items`
  let running = true
  const acknowledged = (exchange: Exchange, expected: number, what: string) => {
    written.statuses[exchange.status] = (written.statuses[exchange.status] ?? 0) + 1
    if (exchange.status !== expected) written.failures.push(`${what}: ${exchange.status} ${exchange.text.slice(0, 300)}`)
    return exchange.status === expected
  }
  const loop = async (n: number) => {
    for (let i = 0; running; i++) {
      const instance = instances[(n + i) % instances.length]!
      const step = `${n}.${i}`
      try {
        // Loop 0 alone renames the known item, so its acknowledged titles are in order.
        if (n === 0 && i % 3 === 2) {
          const title = `renamed ${step}`
          if (acknowledged(await call(instance, 'PATCH', `${items}/${tenant.item.id}`, { bearer: tenant.key, body: { title } }), 200, 'rename')) {
            written.lastTitle = title
            written.patches++
          }
        } else if (i % 2 === 1 && written.items.length) {
          const workItemId = written.items[Math.floor(Math.random() * written.items.length)]!.id
          const body = `ledger entry ${step}`
          const created = await call(instance, 'POST', `/api/v1/work-items/${workItemId}/entries`, { bearer: tenant.key, body: { body } })
          if (acknowledged(created, 201, 'entry')) written.entries.push({ id: created.body.data.id, workItemId, body })
        } else {
          const title = `ledger item ${step}`
          const created = await call(instance, 'POST', items, { bearer: tenant.key, body: { title } })
          if (acknowledged(created, 201, 'item')) written.items.push({ id: created.body.data.id, title })
        }
      } catch (error) {
        written.statuses['0'] = (written.statuses['0'] ?? 0) + 1
        written.failures.push(`transport: ${(error as Error).message}`)
      }
    }
  }
  const loops = [loop(0), loop(1)]
  return {
    async stop() {
      running = false
      await Promise.all(loops)
      return written
    },
  }
}

/** Reads every acknowledged ledger write back through the API (four at a time, alternating instances). */
async function readBack(instances: Instance[], tenant: Tenant, written: Written): Promise<void> {
  const checks: (() => Promise<void>)[] = [
    ...written.items.map((item) => async () => {
      const read = await expectCall(instances[0]!, 200, 'GET', `/api/v1/projects/${tenant.projectId}/work-items/${item.id}`, { bearer: tenant.key })
      expect(read.body.data.title).toBe(item.title)
    }),
    ...written.entries.map((entry) => async () => {
      const read = await expectCall(instances[1]!, 200, 'GET', `/api/v1/work-items/${entry.workItemId}/entries/${entry.id}`, { bearer: tenant.key })
      expect(read.body.data.body).toBe(entry.body)
    }),
    async () => {
      const read = await expectCall(instances[0]!, 200, 'GET', `/api/v1/projects/${tenant.projectId}/work-items/${tenant.item.id}`, { bearer: tenant.key })
      expect(read.body.data.title).toBe(written.lastTitle ?? tenant.item.title)
    },
  ]
  for (let i = 0; i < checks.length; i += 4) await Promise.all(checks.slice(i, i + 4).map((check) => check()))
}

type Phase = 'before' | 'outage' | 'recovery'

/** One answer of the outage probes: `ok` (2xx and correct), `unavailable` (503 with Retry-After, or an MCP tool refused with 503) or `wrong`. */
interface Answer {
  phase: Phase
  organizationId: string
  probe: string
  status: number
  verdict: 'ok' | 'unavailable' | 'wrong'
  detail?: string
  /** A work item the service answered as created. */
  created?: { id: string; title: string }
}

let probeSequence = 0

/** Every probe for the tenant through one instance at once: key check, item read, list, create, display call, MCP tool. */
async function probe(instance: Instance, tenant: Tenant, phase: Phase): Promise<Answer[]> {
  const bearer = tenant.key
  const items = `/api/v1/projects/${tenant.projectId}/work-items`
  const judge = (name: string, exchange: Exchange, problem: (body: any) => string | undefined, unavailable = (body: any) => body?.errors?.[0]?.code === 'UNAVAILABLE'): Answer => {
    const answer = { phase, organizationId: tenant.organizationId, probe: name, status: exchange.status }
    if (exchange.status >= 200 && exchange.status < 300) {
      const detail = problem(exchange.body)
      return { ...answer, verdict: detail ? 'wrong' : 'ok', detail }
    }
    if (exchange.status === 503 && Number(exchange.headers.get('retry-after')) > 0 && unavailable(exchange.body)) return { ...answer, verdict: 'unavailable' }
    return { ...answer, verdict: 'wrong', detail: `${exchange.headers.get('retry-after') ?? 'no'} Retry-After, ${exchange.text.slice(0, 300)}` }
  }
  const title = `probe ${probeSequence++} ${phase}`
  const [me, item, list, created, display, tool] = await Promise.all([
    call(instance, 'GET', '/api/v1/users/me', { bearer }),
    call(instance, 'GET', `${items}/${tenant.item.id}`, { bearer }),
    call(instance, 'GET', `${items}?size=100`, { bearer }),
    call(instance, 'POST', items, { bearer, body: { title } }),
    displayCall(instance, tenant, 'component'),
    mcpToolCall(instance, bearer, 'get_work_item', { projectId: tenant.projectId, workItemId: tenant.item.id }),
  ])
  const itemProblem = (data: any) => (data?.id === tenant.item.id && typeof data.title === 'string' ? undefined : `not the item: ${JSON.stringify(data).slice(0, 200)}`)
  const createdAnswer = judge('create item', created, (body) => (body?.data?.title === title ? undefined : `not the created item: ${JSON.stringify(body).slice(0, 200)}`))
  return [
    judge('users/me', me, (body) => (body?.data?.user?.id === tenant.user.id ? undefined : `another user: ${JSON.stringify(body).slice(0, 200)}`)),
    judge('get item', item, (body) => itemProblem(body?.data)),
    judge('list items', list, (body) => (body?.data?.some?.((row: any) => row.id === tenant.item.id) ? undefined : 'the known item is missing from the list')),
    createdAnswer.verdict === 'ok' ? { ...createdAnswer, created: { id: created.body.data.id, title } } : createdAnswer,
    judge('display call', display, (body) => (body?.message === 'updateSuccess' ? undefined : `not an update: ${display.text.slice(0, 200)}`), (body) => body?.message === 'serviceUnavailable'),
    mcpVerdict(tool, { phase, organizationId: tenant.organizationId, probe: 'mcp get item', status: tool.status }, itemProblem),
  ]
}

/** A JSON-RPC tools/call as one POST (the server is stateless), so the HTTP status and headers are seen. */
function mcpToolCall(instance: Instance, bearer: string, name: string, args: Record<string, unknown>): Promise<Exchange> {
  const body = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }
  return fetch(`${instance.url}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify(body),
  }).then(async (response) => {
    const text = await response.text()
    let parsed: any = text
    try {
      parsed = JSON.parse(text)
    } catch {
      // not JSON: judged wrong below
    }
    return { status: response.status, headers: response.headers, body: parsed, text, ms: 0 }
  })
}

/**
 * A tool's answer: a result (HTTP 200) that is correct, or refused with status 503 in the tool's
 * error payload (a JSON-RPC result has no headers to carry Retry-After); or the whole POST
 * refused with 503 and Retry-After (the key check, before any tool runs).
 */
function mcpVerdict(exchange: Exchange, answer: Omit<Answer, 'verdict'>, problem: (data: any) => string | undefined): Answer {
  const result = exchange.body?.result
  if (exchange.status === 200 && result && !result.isError) {
    const detail = problem(result.structuredContent)
    return { ...answer, verdict: detail ? 'wrong' : 'ok', detail }
  }
  if (exchange.status === 200 && result?.isError && result.structuredContent?.status === 503 && result.structuredContent?.error?.code === 'UNAVAILABLE') return { ...answer, status: 503, verdict: 'unavailable' }
  if (exchange.status === 503 && Number(exchange.headers.get('retry-after')) > 0) return { ...answer, verdict: 'unavailable' }
  return { ...answer, verdict: 'wrong', detail: exchange.text.slice(0, 300) }
}
