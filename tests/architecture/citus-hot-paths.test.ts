/**
 * Hot paths run on one shard (docs/scaling.md, "Citus"): the service runs on a
 * fresh database of a real Citus cluster, every statement it sends during each hot path is
 * captured (tests/helpers/statement-capture.ts), and each is EXPLAINed on the coordinator with its
 * parameters: Citus must plan it as one task (a router query on the organization's shard, or one
 * read of a reference table: sign-in's email lookup), or one task per step on one shard (a
 * data-modifying CTE is planned as a step of its own: the audit record with its list version, the
 * webhook outbox's event and deliveries), or on the coordinator alone (no distributed table:
 * `pg_notify`, the sign-in throttle). The only exceptions are the lookups that cannot know the
 * organization yet, listed in MAY_SPAN_SHARDS, each an indexed probe per shard, once per cache miss.
 *
 * Runs when TEST_CITUS_URL names a Citus coordinator database with its workers added (e.g. made
 * by `cluster.sh createdb`); it makes and drops its own database on every node.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import postgres from 'postgres'
import { openDatabase, queryText, type DatabaseHandle } from '../../src/db'
import { createLogger } from '../../src/log'
import { captureStatements, type CapturedStatement, type StatementCapture } from '../helpers/statement-capture'
import { startTestService, type TestService, type TestUser } from '../helpers/service'
import { createClusterDatabase, type ClusterDatabase } from '../helpers/citus-cluster'
import { connectApp, tokenRequest } from '../helpers/oauth'
import { webSession } from '../helpers/sessions'
import { NotificationFanout } from '../../plugins/notifications/fanout'
import { workPushes } from '../../plugins/notifications/pushes'
import { UserNotifierRef } from '../../plugins/push/api'
import { ProjectAccessRef } from '../../plugins/projects/api'
import { SourceRecompute } from '../../plugins/work-dashboards/queue'
import { purgeBatch } from '../../plugins/work-dashboards/recompute'
import { WorkItemsRef } from '../../plugins/work-items/api'
import { ComponentFeedsRef } from '../../plugins/display/api'
import { CustomFieldsRef } from '../../plugins/custom-fields/api'

const CITUS_URL = process.env.TEST_CITUS_URL

/**
 * The statements that may span every shard, and why: each looks a secret up by its hash, before
 * anything names the organization (the hash is unique across organizations), one indexed probe
 * per shard, and only when the instance's cache does not hold the credential.
 */
const MAY_SPAN_SHARDS: { name: string; matches: (text: string) => boolean }[] = [
  { name: 'API key by secret hash (Bearer check, cache miss)', matches: (text) => /from "api_keys"/.test(text) && /"api_keys"\."secret_hash" = \$1/.test(text) },
  { name: 'session by token hash (session check)', matches: (text) => /from "sessions"/.test(text) && /"sessions"\."token_hash" = \$1/.test(text) },
]

/** How Citus runs a statement. */
interface Routing {
  statement: CapturedStatement
  /** Task Count of each Citus step of the plan; empty: planned on the coordinator alone. */
  tasks: number[]
  /**
   * The hash ranges of the distributed shards the tasks touch (co-located shards share one: the
   * organization's); reference tables' shards have none.
   */
  shardGroups: string[]
  plan: string
}

/** EXPLAINs `statement` with its parameters on the coordinator. */
async function routingOf(coordinator: postgres.Sql, statement: CapturedStatement): Promise<Routing> {
  const rows = await coordinator.unsafe<{ 'QUERY PLAN': string }[]>(`explain (costs off) ${statement.text}`, statement.parameters as never[])
  const plan = rows.map((row) => row['QUERY PLAN']).join('\n')
  const tasks = [...plan.matchAll(/Task Count: (\d+)/g)].map((match) => Number(match[1]))
  if (/Custom Scan \(Citus/.test(plan) && !tasks.length) throw new Error(`a Citus plan without a task count:\n${plan}`)
  // A shown task names its shards: `Index Scan using …_pkey_102523 on projects_102523 p`, `Insert on audit_logs_102044`.
  const shardIds = [...new Set([...plan.matchAll(/\bon [a-z0-9_]+_(\d+)\b/g)].map((match) => match[1]!))]
  const groups = shardIds.length
    ? await coordinator.unsafe<{ range: string | null }[]>('select distinct shardminvalue as range from pg_dist_shard where shardid = any($1::bigint[])', [shardIds])
    : []
  return { statement, tasks, shardGroups: groups.flatMap((group) => (group.range === null ? [] : [group.range])), plan }
}

/**
 * One shard: every step of the plan is one task, on one group of co-located shards (a step
 * planned apart, such as a data-modifying CTE, is a second task on the same shard); or no task
 * (the coordinator alone: no distributed or reference table).
 */
const singleShard = (routing: Routing) => routing.tasks.every((count) => count === 1) && routing.shardGroups.length <= 1

/** The statements of `routings` that span shards and are not allowed to, described. */
function offending(routings: readonly Routing[]): string[] {
  return routings
    .filter((routing) => !singleShard(routing) && !MAY_SPAN_SHARDS.some((allowed) => allowed.matches(routing.statement.text)))
    .map((routing) => `${oneLine(routing.statement.text)}\n  tasks ${routing.tasks.join(', ')}\n${routing.plan}`)
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim()

/** `path → statement → tasks` for the test's log (the list of hot-path statements in docs/scaling.md). */
function describeRouting({ path, routing }: { path: string; routing: Routing }): string {
  const allowed = MAY_SPAN_SHARDS.find((lookup) => lookup.matches(routing.statement.text))
  const tasks = !routing.tasks.length ? 'coordinator only' : routing.tasks.length === 1 ? `${routing.tasks[0]} task(s)` : `${routing.tasks.join(' + ')} tasks`
  return `${path} → ${oneLine(routing.statement.text).slice(0, 140)} → ${tasks}${allowed ? ` (allowed: ${allowed.name})` : ''}`
}

describe('the statement check (without a cluster)', () => {
  test('no task, or one task per step on one group of shards, is one shard; many tasks or steps on two groups are not', () => {
    const statement = { text: 'select 1', parameters: [] }
    expect(singleShard({ statement, tasks: [], shardGroups: [], plan: 'Result' })).toBe(true)
    expect(singleShard({ statement, tasks: [1], shardGroups: ['-134217728'], plan: '' })).toBe(true)
    expect(singleShard({ statement, tasks: [1, 1], shardGroups: ['-134217728'], plan: '' })).toBe(true)
    expect(singleShard({ statement, tasks: [32], shardGroups: ['-134217728'], plan: '' })).toBe(false)
    expect(singleShard({ statement, tasks: [1, 1], shardGroups: ['-134217728', '1342177280'], plan: '' })).toBe(false)
  })
})

const CLUSTER = CITUS_URL ? 'hot paths on a Citus cluster' : 'hot paths on a Citus cluster (skipped: set TEST_CITUS_URL to a Citus coordinator database)'
describe.skipIf(!CITUS_URL)(CLUSTER, () => {
  const name = `wt_citus_hot_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`
  let cluster: ClusterDatabase
  let handle: DatabaseHandle
  let api: TestService
  let capture: StatementCapture
  let coordinator: postgres.Sql
  let user: TestUser
  let key: string
  let projectId: string
  let workItemId: string
  let secondItemId: string
  /** Every hot path's statements as Citus routes them, for the summary. */
  const seen: { path: string; routing: Routing }[] = []

  beforeAll(async () => {
    cluster = await createClusterDatabase(CITUS_URL!, name)
    handle = await openDatabase(cluster.url, { maxConnections: 4 })
    api = await startTestService({
      database: { ...handle, url: cluster.url },
      plugins: ['auth', 'users', 'teams', 'projects', 'work-items', 'labels', 'custom-fields', 'entries', 'notifications', 'relationships', 'content-order', 'search', 'audit-log', 'mcp', 'account', 'display', 'work-dashboards', 'webhooks', 'docs'],
      // Events and notification activities are recorded in the writes' transactions (the change
      // feed's outboxes); nothing is delivered or fanned out but where a test drives it.
      config: { webhooks: { workers: false, allowPrivateTargets: true }, notifications: { workers: false }, 'work-dashboards': { workers: false } },
      log: createLogger('silent'),
    })
    coordinator = postgres(cluster.url, { max: 1, onnotice: () => {} })
    // Another organization, so the shards hold more than the caller's.
    await api.createUser(await api.createOrganization(), 'member')
    const organizationId = await api.createOrganization()
    user = await api.createUser(organizationId, 'administrator')
    key = (await api.createKey(user.id, api.service.core.scopes.map((scope) => scope.name))).secret
    const project = await api.request('POST', '/api/v1/projects', { key, body: { name: 'Hot paths' } })
    expect(project.status).toBe(201)
    projectId = project.body.data.id
    const items = []
    for (const title of ['First', 'Second']) {
      const item = await api.request('POST', `/api/v1/projects/${projectId}/work-items`, { key, body: { title } })
      expect(item.status).toBe(201)
      items.push(item.body.data.id as string)
    }
    ;[workItemId, secondItemId] = items as [string, string]
    expect((await api.request('POST', `/api/v1/work-items/${workItemId}/entries`, { key, body: { body: 'A comment' } })).status).toBe(201)
    expect((await api.request('POST', `/api/v1/projects/${projectId}/relationships`, { key, body: { sourceWorkItemId: items[0], targetWorkItemId: items[1], type: 'blocks' } })).status).toBe(201)
    const team = await api.request('POST', '/api/v1/teams', { key, body: { name: 'Core' } })
    expect(team.status).toBe(201)
    const webhook = await api.request('POST', '/api/v1/webhooks', { key, body: { url: 'http://127.0.0.1:9/hook', events: ['*'] } })
    expect(webhook.status).toBe(201)
    capture = captureStatements(api.service.core.db)
  }, 180_000)

  afterAll(async () => {
    capture?.release()
    await coordinator?.end()
    await api?.stop()
    await handle?.close()
    await cluster?.drop()
    if (seen.length) console.log(`hot path → statement → tasks\n${seen.map(describeRouting).join('\n')}`)
  }, 120_000)

  /** The statement's routing, and what is wrong with it: it spans shards without being allowed to, or Citus refuses it. */
  async function judge(statement: CapturedStatement): Promise<{ routing?: Routing; problems: string[] }> {
    try {
      const routing = await routingOf(coordinator, statement)
      return { routing, problems: offending([routing]) }
    } catch (error) {
      return { problems: [`Citus refused ${oneLine(statement.text)}: ${(error as Error).message}`] }
    }
  }

  /**
   * Runs each hot path of `paths` in turn and EXPLAINs every statement it sent; returns those that
   * span shards without being allowed to, each under its path's name (all paths run either way).
   */
  async function spanningStatements(paths: Record<string, () => Promise<unknown>>): Promise<string[]> {
    const problems: string[] = []
    for (const [path, work] of Object.entries(paths)) {
      const statements = await capture.during(() => work().catch((error: Error) => problems.push(`${path}: ${error.message}`)))
      if (!statements.length) problems.push(`${path}: no statement captured`)
      for (const statement of statements) {
        const judged = await judge(statement)
        if (judged.routing) seen.push({ path, routing: judged.routing })
        problems.push(...judged.problems.map((problem) => `${path}: ${problem}`))
      }
    }
    return problems
  }

  const ok = async (method: string, path: string, options: Parameters<TestService['request']>[2] = {}) => {
    const answer = await api.request(method, path, { key, ...options })
    if (answer.status >= 300) throw new Error(`${method} ${path}: ${answer.status} ${answer.text}`)
    return answer
  }

  test('GET /api/v1/users/me: the key looked up by its hash on a cache miss, the rest on one shard', async () => {
    const fresh = (await api.createKey(user.id, ['users:read'])).secret
    const problems = await spanningStatements({
      'users/me (key not cached)': () => ok('GET', '/api/v1/users/me', { key: fresh }),
    })
    expect(problems).toEqual([])
    // Cached: no statement at all (its lastUsedAt was written a moment ago).
    expect(await capture.during(() => ok('GET', '/api/v1/users/me', { key: fresh }))).toEqual([])
  })

  test('a cached key read again when its cache time ran out is read in its organization, on one shard', async () => {
    // A second instance on the same database (and so the same capture) whose key cache trusts an
    // entry for no time at all: every request after the first reads its cached key again.
    const rereading = await startTestService({
      database: { ...handle, url: cluster.url },
      plugins: ['auth', 'users'],
      config: { auth: { keyCacheTtlSeconds: 0 } },
      log: createLogger('silent'),
    })
    try {
      const fresh = (await api.createKey(user.id, ['users:read'])).secret
      const me = () => rereading.request('GET', '/api/v1/users/me', { key: fresh })
      expect((await me()).status).toBe(200)
      const statements = await capture.during(async () => {
        // Past the first request's millisecond, so the entry is older than no time at all.
        const after = Date.now() + 2
        while (Date.now() < after) await Bun.sleep(1)
        expect((await me()).status).toBe(200)
      })
      expect(statements.filter((statement) => /from "api_keys"/.test(statement.text))).toHaveLength(1)
      for (const statement of statements) {
        const routing = await routingOf(coordinator, statement)
        seen.push({ path: 'users/me (key cache time ran out)', routing })
        expect({ statement: oneLine(statement.text), singleShard: singleShard(routing) }).toEqual({ statement: oneLine(statement.text), singleShard: true })
      }
    } finally {
      await rereading.stop()
    }
  })

  test('a work-item list, cold and cached, runs on one shard', async () => {
    const problems = await spanningStatements({
      'work-item list (cold)': () => ok('GET', `/api/v1/projects/${projectId}/work-items`),
      'work-item list (cached)': () => ok('GET', `/api/v1/projects/${projectId}/work-items`),
      'work-item list (filtered by status: maintained counts)': () => ok('GET', `/api/v1/projects/${projectId}/work-items?status=todo,in_progress&size=1`),
      'work-item list (filtered by priority and sorted: counted)': () => ok('GET', `/api/v1/projects/${projectId}/work-items?priority=gte:0&sort=-updatedAt&size=1`),
      'work-item list (a cursor page)': async () => {
        const first = await ok('GET', `/api/v1/projects/${projectId}/work-items?size=1`)
        await ok('GET', `/api/v1/projects/${projectId}/work-items?size=1&cursor=${first.body.meta.nextCursor}`)
      },
      'work-item list (past the end: the total alone)': () => ok('GET', `/api/v1/projects/${projectId}/work-items?size=100&page=3`),
      'work-item list through a saved view (the view read, then the list; saving and listing views)': async () => {
        const view = await ok('POST', `/api/v1/projects/${projectId}/views`, { body: { name: 'Open', filters: { status: 'todo,in_progress' }, sort: 'priority' } })
        await ok('GET', `/api/v1/projects/${projectId}/views`)
        await ok('GET', `/api/v1/projects/${projectId}/work-items?view=${view.body.data.id}&priority=gte:0&size=1`)
      },
      'work items across projects (cold, cached, a cursor page, counted)': async () => {
        const first = await ok('GET', '/api/v1/work-items?size=1&sort=priority')
        await ok('GET', '/api/v1/work-items?size=1&sort=priority')
        await ok('GET', `/api/v1/work-items?size=1&sort=priority&cursor=${first.body.meta.nextCursor}`)
        await ok('GET', `/api/v1/work-items?size=1&dueDate=none&projectId=${projectId}`)
      },
    })
    expect(problems).toEqual([])
  })

  test('concurrent list reads check access together, in one statement on the organization\'s shard', async () => {
    // Beyond the instance's check statements in flight (projects.checkStatements, 4), checks wait and group.
    const problems = await spanningStatements({
      'work-item lists, 24 at once (grouped access checks)': () => Promise.all(Array.from({ length: 24 }, () => ok('GET', `/api/v1/projects/${projectId}/work-items`))),
    })
    expect(problems).toEqual([])
    const grouped = seen.filter(({ path, routing }) => path.startsWith('work-item lists, 24') && /with ordinality as i\(project_id/.test(routing.statement.text))
    expect(grouped.length).toBeGreaterThan(0)
  })

  test('a work item GET, PATCH and POST run on one shard, with their audit record and list version', async () => {
    const problems = await spanningStatements({
      'work item GET': () => ok('GET', `/api/v1/projects/${projectId}/work-items/${workItemId}`),
      'work item PATCH': () => ok('PATCH', `/api/v1/projects/${projectId}/work-items/${workItemId}`, { body: { title: 'Renamed', status: 'in_progress' } }),
      'work item POST': () => ok('POST', `/api/v1/projects/${projectId}/work-items`, { body: { title: 'Third', assigneeId: user.id } }),
    })
    expect(problems).toEqual([])
  })

  test('keys: a work item by key or id alone, search by key, a project with a derived key and a new key, run on one shard', async () => {
    const itemKey: string = (await ok('GET', `/api/v1/projects/${projectId}/work-items/${workItemId}`)).body.data.key
    let createdId = ''
    const problems = await spanningStatements({
      'work item GET by key': () => ok('GET', `/api/v1/work-items/${itemKey.toLowerCase()}`),
      'work item GET by id alone': () => ok('GET', `/api/v1/work-items/${workItemId}`),
      'work item PATCH by key': () => ok('PATCH', `/api/v1/work-items/${itemKey}`, { body: { priority: 2 } }),
      'search by key': () => ok('GET', `/api/v1/projects/${projectId}/search?q=${itemKey}`),
      'project POST (key derived, a taken one skipped)': async () => (createdId = (await ok('POST', '/api/v1/projects', { body: { name: 'Hot paths' } })).body.data.id),
      'project PATCH of its key': () => ok('PATCH', `/api/v1/projects/${createdId}`, { body: { key: 'ROUTED' } }),
    })
    expect(problems).toEqual([])
  })

  // The idempotency record's claim gives its times as parameters: Citus refuses now() in an ON CONFLICT clause.
  test('labels, custom fields and bulk changes run on one shard: their writes, the work items that show them, their filters and sorts', async () => {
    let labelId = ''
    let fieldId = ''
    let optionId = ''
    let itemId = ''
    const problems = await spanningStatements({
      'label POST': async () => (labelId = (await ok('POST', '/api/v1/labels', { body: { name: 'routed' } })).body.data.id),
      'custom field POST': async () => {
        const field = (await ok('POST', '/api/v1/custom-fields', { body: { key: 'severity', name: 'Severity', type: 'single_select', options: [{ name: 'High' }, { name: 'Low' }] } })).body.data
        ;[fieldId, optionId] = [field.id, field.options[0].id]
      },
      'custom field enabled for the project': () => ok('POST', `/api/v1/projects/${projectId}/custom-fields`, { body: { fieldId } }),
      'work item POST with labels and fields': async () => (itemId = (await ok('POST', `/api/v1/projects/${projectId}/work-items`, { body: { title: 'Labelled', labels: [labelId], fields: { severity: optionId } } })).body.data.id),
      'work item PATCH of labels and fields': () => ok('PATCH', `/api/v1/projects/${projectId}/work-items/${itemId}`, { body: { labels: [], fields: { severity: null } } }),
      'work item list (labels and fields shown, cold)': () => ok('GET', `/api/v1/projects/${projectId}/work-items?size=5`),
      'work item list (label filter)': () => ok('GET', `/api/v1/projects/${projectId}/work-items?label=routed`),
      'work item list (custom field filter)': () => ok('GET', `/api/v1/projects/${projectId}/work-items?field.severity=High,Low`),
      'work item list (sorted by a custom field)': async () => {
        const points = (await ok('POST', '/api/v1/custom-fields', { body: { key: 'points', name: 'Points', type: 'number' } })).body.data
        await ok('POST', `/api/v1/projects/${projectId}/custom-fields`, { body: { fieldId: points.id } })
        await ok('PATCH', `/api/v1/projects/${projectId}/work-items/${itemId}`, { body: { fields: { points: 3 } } })
        await ok('GET', `/api/v1/projects/${projectId}/work-items?field.points=gte:1`)
        const first = await ok('GET', `/api/v1/projects/${projectId}/work-items?sort=-field.points&size=1`)
        await ok('GET', `/api/v1/projects/${projectId}/work-items?sort=-field.points&size=1&cursor=${first.body.meta.nextCursor}`)
      },
      'bulk POST': () => ok('POST', `/api/v1/projects/${projectId}/work-items/bulk`, { body: { items: [{ title: 'Bulk one', labels: [labelId] }, { title: 'Bulk two', fields: { severity: optionId } }] } }),
      'bulk PATCH': () => ok('PATCH', `/api/v1/projects/${projectId}/work-items/bulk`, { body: { items: [{ id: itemId, status: 'done' }, { id: workItemId, labels: [labelId] }] } }),
      'label PATCH': () => ok('PATCH', `/api/v1/labels/${labelId}`, { body: { name: 'renamed' } }),
      'labels list': () => ok('GET', '/api/v1/labels'),
      'custom fields of the project': () => ok('GET', `/api/v1/projects/${projectId}/custom-fields`),
      'custom field PATCH (an option removed)': () => ok('PATCH', `/api/v1/custom-fields/${fieldId}`, { body: { options: [{ id: optionId, name: 'Urgent' }] } }),
      'custom field DELETE (its values go)': () => ok('DELETE', `/api/v1/custom-fields/${fieldId}`),
      'label DELETE': () => ok('DELETE', `/api/v1/labels/${labelId}`),
    })
    expect(problems).toEqual([])
  })

  test('a work item POST with Idempotency-Key, and its replay, run on one shard with the idempotency record', async () => {
    const idempotent = { body: { title: 'Once' }, headers: { 'idempotency-key': `hot-${randomBytes(4).toString('hex')}` } }
    const problems = await spanningStatements({
      'work item POST (Idempotency-Key)': () => ok('POST', `/api/v1/projects/${projectId}/work-items`, idempotent),
      'work item POST (Idempotency-Key, replayed)': () => ok('POST', `/api/v1/projects/${projectId}/work-items`, idempotent),
    })
    expect(problems).toEqual([])
  })

  test('the other writes of work tracking run on one shard', async () => {
    let entryId = ''
    let relationshipId = ''
    let teamId = ''
    const other = await api.createUser(user.organizationId, 'member')
    const memberKey = (await api.createKey(other.id, ['work_items:read'])).secret
    const problems = await spanningStatements({
      'entry POST': async () => (entryId = (await ok('POST', `/api/v1/work-items/${workItemId}/entries`, { body: { body: 'Another comment' } })).body.data.id),
      'entry PATCH': () => ok('PATCH', `/api/v1/work-items/${workItemId}/entries/${entryId}`, { body: { body: 'Edited' } }),
      'relationship POST': async () =>
        (relationshipId = (await ok('POST', `/api/v1/projects/${projectId}/relationships`, { body: { sourceWorkItemId: workItemId, targetWorkItemId: secondItemId, type: 'relates_to' } })).body.data.id),
      'relationship PATCH': () => ok('PATCH', `/api/v1/projects/${projectId}/relationships/${relationshipId}`, { body: { type: 'duplicates' } }),
      'content order PUT': () => ok('PUT', `/api/v1/projects/${projectId}/content-order`, { body: { workItems: [secondItemId, workItemId] } }),
      'project PATCH': () => ok('PATCH', `/api/v1/projects/${projectId}`, { body: { description: 'Routed' } }),
      'project member POST': () => ok('POST', `/api/v1/projects/${projectId}/members`, { body: { userId: other.id, accessLevel: 'viewer' } }),
      'project member PATCH': () => ok('PATCH', `/api/v1/projects/${projectId}/members/${other.id}`, { body: { accessLevel: 'editor' } }),
      'team POST': async () => (teamId = (await ok('POST', '/api/v1/teams', { body: { name: 'Routing' } })).body.data.id),
      'team PATCH': () => ok('PATCH', `/api/v1/teams/${teamId}`, { body: { description: 'One shard' } }),
      'team member POST': () => ok('POST', `/api/v1/teams/${teamId}/members`, { body: { userId: other.id } }),
      'team members list': () => ok('GET', `/api/v1/teams/${teamId}/members`),
      'project team link POST': () => ok('POST', `/api/v1/projects/${projectId}/teams`, { body: { teamId, accessLevel: 'viewer' } }),
      'work item list as a member through a team': () => ok('GET', `/api/v1/projects/${projectId}/work-items`, { key: memberKey }),
      'entry DELETE': () => ok('DELETE', `/api/v1/work-items/${workItemId}/entries/${entryId}`),
      'relationship DELETE': () => ok('DELETE', `/api/v1/projects/${projectId}/relationships/${relationshipId}`),
      'team member DELETE': () => ok('DELETE', `/api/v1/teams/${teamId}/members/${other.id}`),
      'project member DELETE': () => ok('DELETE', `/api/v1/projects/${projectId}/members/${other.id}`),
      'work item DELETE (its relationships counted out first)': async () => {
        const doomed = (await ok('POST', `/api/v1/projects/${projectId}/work-items`, { body: { title: 'Doomed' } })).body.data.id
        await ok('POST', `/api/v1/projects/${projectId}/relationships`, { body: { sourceWorkItemId: doomed, targetWorkItemId: workItemId, type: 'blocks' } })
        await ok('DELETE', `/api/v1/projects/${projectId}/work-items/${doomed}`)
      },
    })
    expect(problems).toEqual([])
  })

  test('entries, relationships, members, teams and projects lists, and a project export and import, run on one shard', async () => {
    const problems = await spanningStatements({
      'entries list': () => ok('GET', `/api/v1/work-items/${workItemId}/entries`),
      'relationships list': () => ok('GET', `/api/v1/projects/${projectId}/relationships`),
      'members list': () => ok('GET', `/api/v1/projects/${projectId}/members`),
      'teams list': () => ok('GET', '/api/v1/teams'),
      'projects list': () => ok('GET', '/api/v1/projects'),
      'project GET': () => ok('GET', `/api/v1/projects/${projectId}`),
      'project export (every section, one snapshot)': () => ok('GET', `/api/v1/projects/${projectId}/export`),
      'project import (every section, into a new project)': async () => {
        const exported = (await ok('GET', `/api/v1/projects/${projectId}/export`)).text
        const target = (await ok('POST', '/api/v1/projects', { body: { name: 'Imported copy' } })).body.data.id
        return ok('POST', `/api/v1/projects/${target}/import`, { rawBody: exported, headers: { 'content-type': 'application/x-ndjson' } })
      },
      'content order GET': () => ok('GET', `/api/v1/projects/${projectId}/content-order`),
      'search': () => ok('GET', `/api/v1/projects/${projectId}/search?q=first`),
      'search (filtered)': () => ok('GET', `/api/v1/projects/${projectId}/search?q=first&status=todo,done&assigneeId=none`),
      'audit log (project, counted)': () => ok('GET', `/api/v1/projects/${projectId}/audit-logs`),
      'audit log (organization, counted)': () => ok('GET', '/api/v1/audit-logs'),
      'project summary (maintained counts)': () => ok('POST', '/mcp', { body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'project_summary', arguments: { projectId } } }, headers: { accept: 'application/json, text/event-stream' } }),
    })
    expect(problems).toEqual([])
  })

  test('notifications: the fan-out of queued changes, the inbox, a thread read, mark-read and watching run on one shard', async () => {
    const access = api.service.core.services.get(ProjectAccessRef)
    const fanout = new NotificationFanout(api.service.core.db, access, { concurrency: 1, batchSize: 50, pollIntervalMs: 1000 }, workPushes(api.service.core.services.find(UserNotifierRef)))
    const other = await api.createUser(user.organizationId, 'member')
    const otherKey = (await api.createKey(other.id, api.service.core.scopes.map((scope) => scope.name))).secret
    await ok('POST', `/api/v1/projects/${projectId}/members`, { body: { userId: other.id, accessLevel: 'viewer' } })
    await ok('PUT', `/api/v1/projects/${projectId}/subscription`, { key: otherKey })
    await ok('POST', `/api/v1/work-items/${workItemId}/entries`, { body: { body: `Thanks @${other.username}` } })
    await ok('PATCH', `/api/v1/projects/${projectId}/work-items/${workItemId}`, { body: { status: 'in_progress', assigneeId: other.id } })
    let threadId = ''
    const problems = await spanningStatements({
      'notification fan-out (claim, hold, fan out, done)': async () => {
        const { changes: handled } = await api.service.core.db.transaction((tx) => fanout.fanOut(tx, user.organizationId, 50))
        if (handled < 2) throw new Error(`the fan-out handled ${handled} changes`)
      },
      'watch a work item, read the subscription': async () => {
        await ok('PUT', `/api/v1/work-items/${workItemId}/subscription`, { key: otherKey })
        await ok('GET', `/api/v1/work-items/${workItemId}/subscription`, { key: otherKey })
      },
      'inbox (with unread count)': async () => {
        const inbox = await ok('GET', '/api/v1/notifications?reason=mentioned', { key: otherKey })
        threadId = inbox.body.data[0].id
      },
      'thread read': () => ok('PATCH', `/api/v1/notifications/${threadId}`, { key: otherKey, body: { read: true } }),
      'mark-read (a project)': () => ok('POST', '/api/v1/notifications/mark-read', { key: otherKey, body: { projectId } }),
    })
    expect(problems).toEqual([])
  })

  test('work sources: binding, the marks of a change, the recompute (claim, build, update, draw, write), the source read, removals and the purge run on one shard', async () => {
    const { core } = api.service
    const queue = new SourceRecompute(
      { db: core.db, work: core.services.get(WorkItemsRef), feeds: core.services.get(ComponentFeedsRef), fields: core.services.find(CustomFieldsRef) },
      { concurrency: 1, pollIntervalMs: 1000, coalesceMs: 0, batchSize: 500 },
    )
    const recompute = async () => {
      const changed: { pageId: string; componentId: string }[] = []
      const { marks } = await core.db.transaction((tx) => queue.recomputeMarked(tx, user.organizationId, 500, changed))
      if (!marks || !changed.length) throw new Error(`the recompute took ${marks} marks and wrote ${changed.length} components`)
    }
    const page = (await ok('POST', '/api/v1/pages', { body: { name: `hot-${Date.now().toString(36)}` } })).body.data
    const view = (await ok('POST', `/api/v1/projects/${projectId}/views`, { body: { name: 'Open', filters: { status: 'todo,in_progress' }, shared: true } })).body.data
    const bindings: [string, Record<string, unknown>][] = [
      ['verticalBox', { measure: 'count', viewId: view.id }],
      ['pieChart', { measure: 'byLabel' }],
      ['barChart', { measure: 'byAssignee' }],
      ['lineChart', { measure: 'openOverTime' }],
      ['horizontalBox', { measure: 'cycleTimeDays' }],
    ]
    const components: string[] = []
    for (const [type] of bindings) components.push((await ok('POST', `/api/v1/pages/${page.id}/components`, { body: { type } })).body.data.id)
    const problems = await spanningStatements({
      'bind sources (count through a view, byLabel, byAssignee, openOverTime, cycleTimeDays)': async () => {
        for (const [i, [, body]] of bindings.entries()) await ok('PUT', `/api/v1/pages/${page.id}/components/${components[i]}/source`, { body: { projectId, ...body } })
      },
      'first recompute (claim, build from the items, draw, write)': recompute,
      'a work item change marks the project': () => ok('PATCH', `/api/v1/projects/${projectId}/work-items/${secondItemId}`, { body: { status: 'done', assigneeId: user.id } }),
      'recompute (the changed item alone, counts moved)': recompute,
      'read a source (binder re-checked)': () => ok('GET', `/api/v1/pages/${page.id}/components/${components[0]}/source`),
      'unbind a source, delete a component and the page (sources retired)': async () => {
        await ok('DELETE', `/api/v1/pages/${page.id}/components/${components[0]}/source`)
        await ok('DELETE', `/api/v1/pages/${page.id}/components/${components[1]}`)
        await ok('DELETE', `/api/v1/pages/${page.id}`)
      },
      "purge the retired sources' rows in batches": async () => {
        // (The service's own workers may take some first.)
        while ((await core.db.transaction((tx) => purgeBatch(tx, user.organizationId))) > 0);
        const [left] = await queryText<{ n: number }>(core.db, 'select count(*)::int as n from work_source_items where organization_id = $1 and component_id = any($2::uuid[])', [user.organizationId, components])
        if (left!.n) throw new Error(`${left!.n} rows of the retired sources are left`)
      },
    })
    expect(problems).toEqual([])
  })

  test('a session sign-in and a session-authenticated request run on one shard but for the token lookup', async () => {
    let token = ''
    const problems = await spanningStatements({
      'session sign-in': async () => {
        const started = await api.request('POST', '/account/api/sessions', { body: { email: user.email, password: user.password } })
        if (started.status !== 201) throw new Error(`sign-in: ${started.status} ${started.text}`)
        token = started.body.data.token
      },
      'session-authenticated GET /account/api/keys': () => ok('GET', '/account/api/keys', { key: token }),
      'session-authenticated POST /account/api/keys': () => ok('POST', '/account/api/keys', { key: token, body: { name: 'from the phone', scopes: ['users:read'] } }),
      'sign-out (DELETE /account/api/sessions/current)': () => ok('DELETE', '/account/api/sessions/current', { key: token }),
    })
    expect(problems).toEqual([])
  })

  test('OAuth: registration, consent, the code exchange, the token check, a refresh and a revocation run on one shard (clients: a reference table)', async () => {
    const cookie = (await webSession(api, user)).cookie
    let app: Awaited<ReturnType<typeof connectApp>> | undefined
    let rotated = ''
    const problems = await spanningStatements({
      'register, consent and exchange a code': async () => {
        app = await connectApp(api, cookie)
      },
      'token-authenticated GET /api/v1/users/me (not cached)': () => ok('GET', '/api/v1/users/me', { key: app!.access_token }),
      'refresh (rotation)': async () => {
        const refreshed = await tokenRequest(api, { grant_type: 'refresh_token', refresh_token: app!.refresh_token, client_id: app!.clientId })
        if (refreshed.status !== 200) throw new Error(`refresh: ${refreshed.status} ${JSON.stringify(refreshed.body)}`)
        rotated = refreshed.body.access_token
      },
      'revocation (RFC 7009)': async () => {
        const revoked = await tokenRequest(api, { token: rotated, client_id: app!.clientId }, '/oauth/revoke')
        if (revoked.status !== 200) throw new Error(`revoke: ${revoked.status}`)
      },
    })
    expect(problems).toEqual([])
    expect((await api.request('GET', '/api/v1/users/me', { key: rotated })).status).toBe(401)
  })

  test('the check fails the statements of a hot path once they lose their organization filter', async () => {
    const [withFilter, without] = await Promise.all([
      routingOf(coordinator, { text: 'select id from work_items where id = $1 and organization_id = $2', parameters: [workItemId, user.organizationId] }),
      routingOf(coordinator, { text: 'select id from work_items where id = $1', parameters: [workItemId] }),
    ])
    expect([withFilter.tasks, withFilter.shardGroups.length, offending([withFilter])]).toEqual([[1], 1, []])
    expect(without.tasks[0]).toBeGreaterThan(1)
    expect(offending([without])).toHaveLength(1)

    // The work item GET's own statements, each condition on the organization made true whatever it
    // names (`x.organization_id = $2` → `$2::uuid is not null`: the same parameters, no filter).
    const statements = await capture.during(() => ok('GET', `/api/v1/projects/${projectId}/work-items/${workItemId}`))
    expect(statements.length).toBe(2)
    const unfiltered = statements.map(({ text, parameters }) => ({ text: text.replace(/(?:[\w"]+\.)?"?organization_id"? = (\$\d+)/g, '$1::uuid is not null'), parameters }))
    expect(unfiltered.map((statement) => statement.text)).not.toEqual(statements.map((statement) => statement.text))
    // The row lookup now spans every shard; the access check's joins are refused outright.
    const judged = await Promise.all(unfiltered.map(judge))
    expect(judged.map((one) => one.problems.length)).toEqual([1, 1])
  })
})
