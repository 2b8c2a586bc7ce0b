/**
 * Grouped display calls are exact: whatever calls arrive together, each gets the answer it would
 * have got had the calls run one after another in arrival order, and the counters and the
 * components end the same. A property over random interleavings of keys (an editor, a viewer,
 * an outsider, another organization's editor, an unknown key), components (two types, another
 * organization's, an unknown id, a non-UUID), data types, timestamps (with ties), refused bodies,
 * limits and group sizes; plus calls of two organizations in one statement, calls that find no
 * counter row, two instances with 400 concurrent calls at a limit of 150, and a group that
 * PostgreSQL refuses.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { CallGroups, type CallGroupOptions } from '../../plugins/display/calls/groups'
import { DisplayCallsRef } from '../../plugins/display/api'
import { KeyOrganizations } from '../../plugins/display/calls/key-organizations'
import { DISPLAY_KEY_PREFIX } from '../../plugins/display/model'
import { updateComponent } from '../../plugins/display/calls/update'
import { hasCitus } from '../../src/citus'
import { generateSecret } from '../../src/secrets'
import { queryText } from '../../src/db'
import { createDisplayFixture, SAMPLE_DATA, type DisplayFixture } from '../helpers/display-fixture'
import { testTriggers } from '../helpers/test-triggers'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let fx: DisplayFixture
/** Another organization's dashboard: its creator's calls go in the same groups (one statement on plain PostgreSQL and PGlite). */
let far: DisplayFixture
/** On Citus a group holds one organization's calls; on plain PostgreSQL and PGlite, any. */
let citus: boolean

beforeAll(async () => {
  api = await startTestService()
  fx = await createDisplayFixture(api)
  far = await createDisplayFixture(api)
  citus = await hasCitus(api.service.core.db)
})
afterAll(() => api.stop())

interface CallSpec {
  who: 'creator' | 'reader' | 'outsider' | 'elsewhere' | 'unknown'
  component: 'barChart' | 'lineChart' | 'elsewhere' | 'unknown' | 'notUuid'
  dataType: 'barChart' | 'lineChart'
  timestamp: number
  refusedBody: boolean
}

const callSpec = fc.record<CallSpec>({
  who: fc.constantFrom('creator', 'creator', 'creator', 'reader', 'outsider', 'elsewhere', 'elsewhere', 'unknown'),
  component: fc.constantFrom('barChart', 'barChart', 'lineChart', 'lineChart', 'elsewhere', 'elsewhere', 'unknown', 'notUuid'),
  dataType: fc.constantFrom('barChart', 'lineChart'),
  timestamp: fc.integer({ min: 1, max: 6 }),
  refusedBody: fc.integer({ min: 0, max: 9 }).map((n) => n < 2),
})

/** Well-formed (its checksum holds), so it reaches the database, where no account has it. */
const UNKNOWN_KEY = generateSecret(DISPLAY_KEY_PREFIX)

function bodyOf(spec: CallSpec, n: number): unknown {
  const key = { creator: fx.creator.displayApiKey, reader: fx.reader.displayApiKey, outsider: fx.outsider.displayApiKey, elsewhere: far.creator.displayApiKey, unknown: UNKNOWN_KEY }[spec.who]
  const componentId = {
    barChart: fx.components.barChart,
    lineChart: fx.components.lineChart,
    elsewhere: far.components.barChart,
    unknown: '00000000-0000-7000-8000-000000000000',
    notUuid: 'nope',
  }[spec.component]
  // The data names its call, so the test sees which update was written last.
  const data = { ...SAMPLE_DATA[spec.dataType], points: [{ x: `call ${n}`, y: n, color: '#123456' }] }
  if (spec.refusedBody) return { componentId, apiKey: key, timestamp: spec.timestamp } // no data: 400, counted
  return { componentId, apiKey: key, timestamp: spec.timestamp, data }
}

const users = () => [fx.creator.id, fx.reader.id, fx.outsider.id, far.creator.id]
const components = () => [fx.components.barChart, fx.components.lineChart, far.components.barChart]

async function reset(limits: { creator: number; reader: number }) {
  const db = api.service.core.db
  await queryText(db, 'delete from display_usage where user_id = any($1::uuid[])', [users()])
  // The other organization's creator has the creator's limit, so its calls are counted and refused in the same groups.
  await queryText(db, 'update display_accounts set daily_limit = case user_id when $1 then $2 when $6 then $2 when $3 then $4 else 1000 end where user_id = any($5::uuid[])', [
    fx.creator.id,
    limits.creator,
    fx.reader.id,
    limits.reader,
    users(),
    far.creator.id,
  ])
  await queryText(db, 'update components set data = null, data_timestamp = null where id = any($1::uuid[])', [components()])
}

async function state() {
  const db = api.service.core.db
  const stored = await queryText(db, 'select id, data, data_timestamp as "timestamp" from components where id = any($1::uuid[]) order by id', [components()])
  const usage = await queryText(db, 'select user_id as "userId", calls from display_usage where user_id = any($1::uuid[]) order by user_id', [users()])
  return { components: stored, usage }
}

/** What a caller sees of an outcome. */
const answerOf = (outcome: Awaited<ReturnType<typeof updateComponent>>) => (outcome.ok ? { status: 200, usage: outcome.usage } : { status: outcome.status, message: outcome.error.message, usage: outcome.usage })

/** A line of its own (and, unless given, its own memory of keys' organizations: its first calls look their keys up). */
const groupsWith = (options: Partial<CallGroupOptions>, keys?: KeyOrganizations) => new CallGroups(api.service.core.db, { enabled: true, maxCalls: 256, concurrency: 1, ...options }, keys)

describe('grouped display calls', () => {
  test('every caller gets the answer, and the database the state, of the same calls run one by one in arrival order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(callSpec, { minLength: 1, maxLength: 24 }),
        fc.integer({ min: 0, max: 14 }),
        fc.integer({ min: 0, max: 6 }),
        fc.integer({ min: 2, max: 24 }),
        fc.boolean(),
        async (specs, creatorLimit, readerLimit, maxCalls, keysKnown) => {
          const bodies = specs.map(bodyOf)
          await reset({ creator: creatorLimit, reader: readerLimit })
          // Either the grouped line looks its keys up as the calls arrive, or it already knows them
          // (from the calls run one by one).
          const keys = keysKnown ? new KeyOrganizations(api.service.core.db) : undefined
          const serial = groupsWith({ enabled: false }, keys)
          const one: ReturnType<typeof answerOf>[] = []
          for (const body of bodies) one.push(answerOf(await updateComponent(serial, body)))
          const afterOne = await state()

          await reset({ creator: creatorLimit, reader: readerLimit })
          const grouped = groupsWith({ maxCalls }, keys)
          // Submitted together: the first runs alone, the others wait and go in groups of `maxCalls`.
          const together = (await Promise.all(bodies.map((body) => updateComponent(grouped, body)))).map(answerOf)
          expect(together).toEqual(one)
          expect(await state()).toEqual(afterOne)
          // With the keys known, every call is in line at once: an unknown key is refused before
          // any statement, the first other call runs alone, and of the rest those that may share a
          // group (on Citus, of one organization) go together. (While keys are looked up, a call
          // waits for the lookups of the calls before it, so how calls group depends on timing.)
          const [, ...waiting] = specs.filter((spec) => spec.who !== 'unknown')
          const farCalls = waiting.filter((spec) => spec.who === 'elsewhere').length
          const mayShare = citus ? Math.max(farCalls, waiting.length - farCalls) : waiting.length
          if (keysKnown && mayShare >= 2) expect(grouped.stats.grouped).toBeGreaterThanOrEqual(2)
          expect(grouped.stats.retried).toBe(0)
        },
      ),
      { numRuns: Number(process.env.GROUP_RUNS ?? 120), seed: Number(process.env.GROUP_SEED ?? 20261123) },
    )
  }, 120_000)

  test('a group PostgreSQL refuses changes nothing, and its calls run again one by one', async () => {
    await reset({ creator: 100, reader: 0 })
    const db = api.service.core.db
    // A trigger that refuses the group's counter update once (PostgreSQL's own error, as a deadlock
    // would be). On Citus it runs on the worker holding the counter's shard, so the sequence that
    // makes it refuse once is made on every node: only that worker's is used.
    const triggers = await testTriggers(api.database)
    await triggers.onEveryNode('create sequence refuse_once')
    await queryText(
      db,
      `create function refuse_group() returns trigger language plpgsql as $$
         begin if new.calls - new.previous_calls > 1 and nextval('refuse_once') = 1 then raise exception 'refused for the test' using errcode = '40P01'; end if; return new; end $$`,
      [],
    )
    await triggers.createTrigger({ name: 'refuse_group', timing: 'before update', table: 'display_usage', function: 'refuse_group' })
    try {
      await updateComponent(groupsWith({ enabled: false }), bodyOf({ who: 'creator', component: 'barChart', dataType: 'barChart', timestamp: 1, refusedBody: false }, 0))
      const grouped = groupsWith({})
      const specs: CallSpec[] = [2, 3, 4, 5].map((timestamp) => ({ who: 'creator', component: 'barChart', dataType: 'barChart', timestamp, refusedBody: false }))
      const answers = (await Promise.all(specs.map((spec, n) => updateComponent(grouped, bodyOf(spec, n + 1))))).map(answerOf)
      expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200])
      expect(answers.map((answer) => answer.usage!.used)).toEqual([2, 3, 4, 5])
      expect(grouped.stats.retried).toBe(3)
      const { usage, components } = await state()
      expect(usage).toEqual([{ userId: fx.creator.id, calls: 5 }])
      expect(components.find((component: any) => component.id === fx.components.barChart)).toMatchObject({ timestamp: 5 })
    } finally {
      await triggers.dropTrigger('refuse_group', 'display_usage')
      await triggers.close()
    }
  })
})

describe('groups of several organizations', () => {
  test('calls of two organizations go together (one statement on plain PostgreSQL and PGlite, one per organization on Citus), with the answers of the calls one by one', async () => {
    const second = await createDisplayFixture(api)
    const bodies = Array.from({ length: 12 }, (_, n) => {
      const dashboard = n % 3 ? fx : second
      return { componentId: dashboard.components.barChart, apiKey: dashboard.creator.displayApiKey, timestamp: 100 + (n % 4), data: { ...SAMPLE_DATA.barChart, points: [{ x: `call ${n}`, y: n, color: '#123456' }] } }
    })
    const limits = async () => {
      await reset({ creator: 5, reader: 0 })
      await queryText(api.service.core.db, 'delete from display_usage where user_id = $1', [second.creator.id])
      await queryText(api.service.core.db, 'update display_accounts set daily_limit = 3 where user_id = $1', [second.creator.id])
      await queryText(api.service.core.db, 'update components set data = null, data_timestamp = null where id = $1', [second.components.barChart])
    }
    const stored = () => queryText(api.service.core.db, 'select id, data, data_timestamp as "timestamp" from components where id = any($1::uuid[]) order by id', [[fx.components.barChart, second.components.barChart]])
    await limits()
    // The keys' organizations known to both lines, so the grouped calls queue at once, in order.
    const keys = new KeyOrganizations(api.service.core.db)
    const serial = groupsWith({ enabled: false }, keys)
    const one: ReturnType<typeof answerOf>[] = []
    for (const body of bodies) one.push(answerOf(await updateComponent(serial, body)))
    const afterOne = await stored()
    await limits()
    const grouped = groupsWith({}, keys)
    const together = (await Promise.all(bodies.map((body) => updateComponent(grouped, body)))).map(answerOf)
    expect(together).toEqual(one)
    expect(await stored()).toEqual(afterOne)
    // The first call alone, then the other 11 in one statement (on Citus: one per organization).
    expect(grouped.stats).toMatchObject({ statements: citus ? 3 : 2, grouped: 11, retried: 0 })
  })
})

describe('counter rows', () => {
  test('calls that find no counter row for today (the day began since it was made) make it and are counted exactly, in groups too', async () => {
    await reset({ creator: 7, reader: 0 })
    const grouped = groupsWith({})
    const call = (n: number) => updateComponent(grouped, bodyOf({ who: 'creator', component: 'barChart', dataType: 'barChart', timestamp: n, refusedBody: false }, n))
    expect((await call(1)).ok).toBe(true)
    // The line made the row today and remembers it; the row goes, as at midnight.
    await queryText(api.service.core.db, 'delete from display_usage where user_id = $1', [fx.creator.id])
    // The outsider's call runs first, alone (and makes only the outsider's row); the creator's wait and go together.
    const outsider = updateComponent(grouped, bodyOf({ who: 'outsider', component: 'barChart', dataType: 'barChart', timestamp: 1, refusedBody: false }, 1))
    const answers = (await Promise.all([outsider, ...[2, 3, 4, 5, 6, 7, 8, 9, 10].map(call)])).map(answerOf)
    expect(answers.map((answer) => answer.status)).toEqual([404, 200, 200, 200, 200, 200, 200, 200, 429, 429])
    expect(answers.map((answer) => answer.usage!.used)).toEqual([1, 1, 2, 3, 4, 5, 6, 7, 7, 7])
    expect(grouped.stats.grouped).toBeGreaterThan(0)
    expect((await state()).usage).toContainEqual({ userId: fx.creator.id, calls: 7 })
  })
})

describe('grouped calls across two instances', () => {
  test('400 concurrent calls at a limit of 150: exactly 150 counted, remaining 149..0 once each, grouped on both instances', async () => {
    const other = await startTestService({ database: api.database })
    try {
      const tight = await createDisplayFixture(api)
      await queryText(api.service.core.db, 'update display_accounts set daily_limit = 150 where user_id = $1', [tight.creator.id])
      const before = [api, other].map((instance) => instance.service.core.services.get(DisplayCallsRef).groupStats().grouped)
      const responses = await Promise.all(
        Array.from({ length: 400 }, (_, i) =>
          (i % 2 ? api : other).request('POST', '/api/component', {
            body: { componentId: i % 3 ? tight.components.lineChart : tight.components.barChart, apiKey: tight.creator.displayApiKey, timestamp: 1000 + (i % 50), data: i % 3 ? SAMPLE_DATA.lineChart : SAMPLE_DATA.barChart },
          }),
        ),
      )
      const counted = responses.filter((response) => response.status === 200 || response.status === 409)
      expect(counted).toHaveLength(150)
      expect(responses.filter((response) => response.status === 429)).toHaveLength(250)
      const remaining = counted.map((response) => Number(response.headers.get('x-ratelimit-remaining'))).sort((a, b) => a - b)
      expect(remaining).toEqual(Array.from({ length: 150 }, (_, i) => i))
      const [usage] = await queryText<{ calls: number }>(api.service.core.db, 'select calls from display_usage where user_id = $1', [tight.creator.id])
      expect(usage!.calls).toBe(150)
      const after = [api, other].map((instance) => instance.service.core.services.get(DisplayCallsRef).groupStats().grouped)
      expect(after[0]! - before[0]!).toBeGreaterThan(0)
      expect(after[1]! - before[1]!).toBeGreaterThan(0)
    } finally {
      await other.stop()
    }
  })
})
