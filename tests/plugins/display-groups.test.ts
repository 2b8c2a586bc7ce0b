/**
 * Grouped display calls are exact: whatever calls arrive together, each gets the answer it would
 * have got had the calls run one after another in arrival order, and the counters and the
 * components end the same. A property over random interleavings of keys (an editor, a viewer,
 * an outsider, an unknown key), components (two types, an unknown id, a non-UUID), data types,
 * timestamps (with ties), refused bodies, limits and group sizes; plus two instances with 400
 * concurrent calls at a limit of 150, and a group that PostgreSQL refuses.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { CallGroups, type CallGroupOptions } from '../../plugins/display/call-groups'
import { DisplayCallsRef } from '../../plugins/display/api'
import { DISPLAY_KEY_PREFIX } from '../../plugins/display/model'
import { updateComponent } from '../../plugins/display/update'
import { generateSecret } from '../../src/secrets'
import { queryText } from '../../src/db'
import { createDisplayFixture, SAMPLE_DATA, type DisplayFixture } from '../helpers/display-fixture'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let fx: DisplayFixture

beforeAll(async () => {
  api = await startTestService()
  fx = await createDisplayFixture(api)
})
afterAll(() => api.stop())

interface CallSpec {
  who: 'creator' | 'reader' | 'outsider' | 'unknown'
  component: 'barChart' | 'lineChart' | 'unknown' | 'notUuid'
  dataType: 'barChart' | 'lineChart'
  timestamp: number
  refusedBody: boolean
}

const callSpec = fc.record<CallSpec>({
  who: fc.constantFrom('creator', 'creator', 'creator', 'reader', 'outsider', 'unknown'),
  component: fc.constantFrom('barChart', 'barChart', 'lineChart', 'lineChart', 'unknown', 'notUuid'),
  dataType: fc.constantFrom('barChart', 'lineChart'),
  timestamp: fc.integer({ min: 1, max: 6 }),
  refusedBody: fc.integer({ min: 0, max: 9 }).map((n) => n < 2),
})

/** Well-formed (its checksum holds), so it reaches the database, where no account has it. */
const UNKNOWN_KEY = generateSecret(DISPLAY_KEY_PREFIX)

function bodyOf(spec: CallSpec, n: number): unknown {
  const key = { creator: fx.creator.displayApiKey, reader: fx.reader.displayApiKey, outsider: fx.outsider.displayApiKey, unknown: UNKNOWN_KEY }[spec.who]
  const componentId = { barChart: fx.components.barChart, lineChart: fx.components.lineChart, unknown: '00000000-0000-7000-8000-000000000000', notUuid: 'nope' }[spec.component]
  // The data names its call, so the test sees which update was written last.
  const data = { ...SAMPLE_DATA[spec.dataType], points: [{ x: `call ${n}`, y: n, color: '#123456' }] }
  if (spec.refusedBody) return { componentId, apiKey: key, timestamp: spec.timestamp } // no data: 400, counted
  return { componentId, apiKey: key, timestamp: spec.timestamp, data }
}

const users = () => [fx.creator.id, fx.reader.id, fx.outsider.id]

async function reset(limits: { creator: number; reader: number }) {
  const db = api.service.core.db
  await queryText(db, 'delete from display_usage where user_id = any($1::uuid[])', [users()])
  await queryText(db, 'update display_accounts set daily_limit = case user_id when $1 then $2 when $3 then $4 else 1000 end where user_id = any($5::uuid[])', [
    fx.creator.id,
    limits.creator,
    fx.reader.id,
    limits.reader,
    users(),
  ])
  await queryText(db, 'update components set data = null, data_timestamp = null where id = any($1::uuid[])', [[fx.components.barChart, fx.components.lineChart]])
}

async function state() {
  const db = api.service.core.db
  const components = await queryText(db, 'select id, data, data_timestamp as "timestamp" from components where id = any($1::uuid[]) order by id', [[fx.components.barChart, fx.components.lineChart]])
  const usage = await queryText(db, 'select user_id as "userId", calls from display_usage where user_id = any($1::uuid[]) order by user_id', [users()])
  return { components, usage }
}

/** What a caller sees of an outcome. */
const answerOf = (outcome: Awaited<ReturnType<typeof updateComponent>>) => (outcome.ok ? { status: 200, usage: outcome.usage } : { status: outcome.status, message: outcome.error.message, usage: outcome.usage })

const groupsWith = (options: Partial<CallGroupOptions>) => new CallGroups(api.service.core.db, { enabled: true, maxCalls: 256, concurrency: 1, ...options })

describe('grouped display calls', () => {
  test('every caller gets the answer, and the database the state, of the same calls run one by one in arrival order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(callSpec, { minLength: 1, maxLength: 24 }),
        fc.integer({ min: 0, max: 14 }),
        fc.integer({ min: 0, max: 6 }),
        fc.integer({ min: 2, max: 24 }),
        async (specs, creatorLimit, readerLimit, maxCalls) => {
          const bodies = specs.map(bodyOf)
          await reset({ creator: creatorLimit, reader: readerLimit })
          const serial = groupsWith({ enabled: false })
          const one: ReturnType<typeof answerOf>[] = []
          for (const body of bodies) one.push(answerOf(await updateComponent(serial, body)))
          const afterOne = await state()

          await reset({ creator: creatorLimit, reader: readerLimit })
          const grouped = groupsWith({ maxCalls })
          // Submitted together: the first runs alone, the others wait and go in groups of `maxCalls`.
          const together = (await Promise.all(bodies.map((body) => updateComponent(grouped, body)))).map(answerOf)
          expect(together).toEqual(one)
          expect(await state()).toEqual(afterOne)
          // An unknown key is refused before any statement (its organization cannot be found).
          if (specs.filter((spec) => spec.who !== 'unknown').length >= 3) expect(grouped.stats.grouped).toBeGreaterThanOrEqual(2)
          expect(grouped.stats.retried).toBe(0)
        },
      ),
      { numRuns: Number(process.env.GROUP_RUNS ?? 120), seed: Number(process.env.GROUP_SEED ?? 20261123) },
    )
  }, 120_000)

  test('a group PostgreSQL refuses changes nothing, and its calls run again one by one', async () => {
    await reset({ creator: 100, reader: 0 })
    const db = api.service.core.db
    // A trigger that refuses the group's counter update once (PostgreSQL's own error, as a deadlock would be).
    await queryText(db, 'create sequence refuse_once', [])
    await queryText(
      db,
      `create function refuse_group() returns trigger language plpgsql as $$
         begin if new.calls - new.previous_calls > 1 and nextval('refuse_once') = 1 then raise exception 'refused for the test' using errcode = '40P01'; end if; return new; end $$`,
      [],
    )
    await queryText(db, 'create trigger refuse_group before update on display_usage for each row execute function refuse_group()', [])
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
      await queryText(db, 'drop trigger refuse_group on display_usage', [])
    }
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
