/**
 * The statement batcher (src/batcher.ts) against a fake runner, no database: a property over
 * random arrivals of items of several organizations (some looked up, some unknown), random
 * statement latencies (fast-check's scheduler decides when each statement, lookup and arrival
 * settles) and random group failures, rolled back or with the connection lost; plus examples of
 * each rule.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { rolledBack, StatementBatcher, type BatchRunners } from '../../src/batcher'

interface Item {
  id: number
  organization: string
}

type Outcome = 'ok' | 'rolledBack' | 'lost'

/** The server refused the statement: its transaction rolled back. */
const refused = (what: string) => Object.assign(new Error(`refused: ${what}`), { code: '40P01', severity: 'ERROR' })
/** The connection went mid-statement: the commit is unknown. */
const lost = (what: string) => Object.assign(new Error(`lost: ${what}`), { code: 'ECONNRESET' })

/** What an item's own statement answers. */
const answerOf = (item: Item) => `answer ${item.id} of ${item.organization}`

interface Statement {
  kind: 'one' | 'group'
  ids: number[]
  organizationId: string | null
  organizations: readonly string[]
  outcome: Outcome
}

/** A fake runner: records every statement as it starts, answers `answerOf` unless told to fail. */
function fakeRunner(settle: <T>(value: Promise<T>) => Promise<T>, outcomes: { one(item: Item): Outcome; group(n: number): Outcome }) {
  const started: Statement[] = []
  let inFlight = 0
  let maxInFlight = 0
  const run = async <T,>(statement: Statement, answer: () => T): Promise<T> => {
    started.push(statement)
    maxInFlight = Math.max(maxInFlight, ++inFlight)
    try {
      await settle(Promise.resolve())
    } finally {
      inFlight--
    }
    const what = `${statement.kind} ${statement.ids.join(',')}`
    if (statement.outcome === 'rolledBack') throw refused(what)
    if (statement.outcome === 'lost') throw lost(what)
    return answer()
  }
  const runners: BatchRunners<Item, string> = {
    one: (item, organizationId) => run({ kind: 'one', ids: [item.id], organizationId, organizations: [organizationId], outcome: outcomes.one(item) }, () => answerOf(item)),
    group: (items, organizationId, organizations) =>
      run({ kind: 'group', ids: items.map((item) => item.id), organizationId, organizations, outcome: outcomes.group(started.filter((s) => s.kind === 'group').length) }, () => items.map(answerOf)),
  }
  return { runners, started, maxInFlight: () => maxInFlight }
}

const ORGANIZATIONS = ['a', 'b', 'c', 'd']

interface Arrival {
  organization: number
  /** How the item names its organization: known, a lookup that finds it, one that finds none, one that fails. */
  lookup: 'known' | 'found' | 'none' | 'fails'
  /** Its own statement fails (the server refuses it). */
  refusedAlone: boolean
}

const arrival = fc.record<Arrival>({
  organization: fc.integer({ min: 0, max: ORGANIZATIONS.length - 1 }),
  lookup: fc.constantFrom('known', 'known', 'known', 'found', 'found', 'none', 'fails'),
  refusedAlone: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
})

const groupOutcome = fc.constantFrom<Outcome>('ok', 'ok', 'ok', 'rolledBack', 'lost')

describe('the statement batcher', () => {
  test('every item answered once, as alone; organizations in arrival order; bounds held; failed groups by the one rule', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(arrival, { minLength: 1, maxLength: 40 }),
        fc.array(groupOutcome, { minLength: 1, maxLength: 20 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 2, max: 6 }),
        fc.boolean(),
        fc.boolean(),
        async (s, arrivals, groupOutcomes, concurrency, maxItems, citus, citusLater) => {
          const fake = fakeRunner((value) => s.schedule(value), {
            one: (item) => (arrivals[item.id]!.refusedAlone ? 'rolledBack' : 'ok'),
            group: (n) => groupOutcomes[n % groupOutcomes.length]!,
          })
          const batcher = new StatementBatcher<Item, string>({ enabled: true, maxItems, concurrency, citus: citusLater ? s.schedule(Promise.resolve(citus)) : citus }, fake.runners)
          const items = arrivals.map((spec, id): Item => ({ id, organization: ORGANIZATIONS[spec.organization]! }))
          const settled = new Map<number, { answer?: unknown; error?: unknown; times: number }>()
          /** Item ids in the order they were given to the batcher. */
          const order: number[] = []
          const submit = (item: Item) => {
            const spec = arrivals[item.id]!
            const organization =
              spec.lookup === 'known'
                ? item.organization
                : s.schedule(spec.lookup === 'fails' ? Promise.reject(lost(`lookup ${item.id}`)) : Promise.resolve(spec.lookup === 'none' ? null : item.organization))
            order.push(item.id)
            const record = (outcome: { answer?: unknown; error?: unknown }) => {
              const previous = settled.get(item.id)
              settled.set(item.id, { ...outcome, times: (previous?.times ?? 0) + 1 })
            }
            batcher.run(item, organization).then(
              (answer) => record({ answer }),
              (error) => record({ error }),
            )
          }
          // Arrivals interleave with statements, lookups and each other as the scheduler decides.
          for (const item of items) void s.schedule(Promise.resolve()).then(() => submit(item))
          await s.waitIdle()
          await Promise.resolve()

          const groups = fake.started.filter((statement) => statement.kind === 'group')
          const firstStart = new Map<number, [number, number]>()
          fake.started.forEach((statement, index) => statement.ids.forEach((id, position) => firstStart.has(id) || firstStart.set(id, [index, position])))
          const lostGroups = groups.filter((group) => group.outcome === 'lost')
          const lostWith = new Map(lostGroups.flatMap((group) => group.ids.map((id) => [id, group] as const)))

          for (const item of items) {
            const spec = arrivals[item.id]!
            const outcome = settled.get(item.id)
            // Answered exactly once.
            expect(outcome?.times).toBe(1)
            const statements = fake.started.filter((statement) => statement.ids.includes(item.id))
            if (spec.lookup === 'none' || spec.lookup === 'fails') {
              expect(statements).toEqual([])
              if (spec.lookup === 'none') expect(outcome).toEqual({ answer: undefined, times: 1 })
              else expect((outcome!.error as Error).message).toBe(`lost: lookup ${item.id}`)
              continue
            }
            const lostGroup = lostWith.get(item.id)
            if (lostGroup) {
              // A lost connection: the group's items get its error, and never run again.
              expect((outcome!.error as Error).message).toBe(`lost: group ${lostGroup.ids.join(',')}`)
              expect(statements.at(-1)).toBe(lostGroup)
              continue
            }
            // Otherwise the answer of its own statement: its answer, or its refusal.
            if (spec.refusedAlone && statements.at(-1)!.kind === 'one') expect((outcome!.error as Error).message).toBe(`refused: one ${item.id}`)
            else expect(outcome).toEqual({ answer: answerOf(item), times: 1 })
            // Every group of it before its last statement was rolled back, and then it ran alone.
            statements.slice(0, -1).forEach((statement) => expect(statement).toMatchObject({ kind: 'group', outcome: 'rolledBack' }))
            if (statements.length > 1) expect(statements.at(-1)!.kind).toBe('one')
          }
          // Statements were given the items' organizations.
          for (const statement of fake.started) {
            expect(statement.organizations).toEqual(statement.ids.map((id) => items[id]!.organization))
            const one = new Set(statement.organizations).size === 1
            expect(statement.organizationId).toBe(one ? statement.organizations[0]! : null)
          }
          // Per organization, items start their statements in arrival order.
          for (const organization of ORGANIZATIONS) {
            const ran = order.filter((id) => items[id]!.organization === organization && firstStart.has(id))
            const starts = ran.map((id) => firstStart.get(id)!)
            const sorted = [...starts].sort((x, y) => x[0] - y[0] || x[1] - y[1])
            expect(starts).toEqual(sorted)
          }
          expect(fake.maxInFlight()).toBeLessThanOrEqual(concurrency)
          for (const group of groups) {
            expect(group.ids.length).toBeGreaterThanOrEqual(2)
            expect(group.ids.length).toBeLessThanOrEqual(maxItems)
            // Ids are arrival positions within the batcher: a group keeps its items' order.
            const positions = group.ids.map((id) => order.indexOf(id))
            expect(positions).toEqual([...positions].sort((x, y) => x - y))
            if (citus) expect(new Set(group.organizations).size).toBe(1)
          }
          const rolledBackItems = groups.filter((group) => group.outcome === 'rolledBack').reduce((sum, group) => sum + group.ids.length, 0)
          expect(batcher.stats).toEqual({
            statements: fake.started.length,
            items: fake.started.reduce((sum, statement) => sum + statement.ids.length, 0),
            grouped: groups.reduce((sum, group) => sum + group.ids.length, 0),
            retried: rolledBackItems,
          })
        },
      ),
      { numRuns: Number(process.env.BATCHER_RUNS ?? 300) },
    )
  })
})

/** A statement that settles when the test says. */
function deferred<T>() {
  let resolve!: (value: T) => void
  let reject!: (error: unknown) => void
  const promise = new Promise<T>((yes, no) => {
    resolve = yes
    reject = no
  })
  return { promise, resolve, reject }
}

/** A runner whose statements wait for the test: `pending` in start order, each with its items. */
function manualRunner() {
  const pending: Array<{ kind: 'one' | 'group'; ids: number[]; organizationId: string | null; settle: ReturnType<typeof deferred<unknown>> }> = []
  const runners: BatchRunners<Item, string> = {
    one(item, organizationId) {
      const settle = deferred<unknown>()
      pending.push({ kind: 'one', ids: [item.id], organizationId, settle })
      return settle.promise.then(() => answerOf(item))
    },
    group(items, organizationId) {
      const settle = deferred<unknown>()
      pending.push({ kind: 'group', ids: items.map((item) => item.id), organizationId, settle })
      return settle.promise.then(() => items.map(answerOf))
    },
  }
  /** Lets every pending microtask run (a settled statement's answers reach their callers, the next statements start). */
  const flush = () => new Promise<void>((resolve) => setImmediate(resolve))
  return { runners, pending, flush }
}

const item = (id: number, organization = 'a'): Item => ({ id, organization })

describe('the statement batcher, by example', () => {
  test('a lone item runs at once, as its own statement', () => {
    const { runners, pending } = manualRunner()
    const batcher = new StatementBatcher({ enabled: true, maxItems: 10, concurrency: 2, citus: false }, runners)
    void batcher.run(item(0), 'a')
    expect(pending.map(({ kind, ids }) => ({ kind, ids }))).toEqual([{ kind: 'one', ids: [0] }])
    void batcher.run(item(1), 'b')
    expect(pending).toHaveLength(2)
  })

  test('items waiting while statements run go as one statement; off Citus it spans organizations, on Citus one per organization', async () => {
    for (const citus of [false, true]) {
      const { runners, pending, flush } = manualRunner()
      const batcher = new StatementBatcher({ enabled: true, maxItems: 10, concurrency: 1, citus }, runners)
      const answers = [item(0), item(1, 'b'), item(2), item(3, 'b'), item(4, 'c')].map((it) => batcher.run(it, it.organization))
      expect(pending).toHaveLength(1)
      pending[0]!.settle.resolve(undefined)
      await flush()
      expect(pending[1]).toMatchObject(citus ? { kind: 'group', ids: [1, 3], organizationId: 'b' } : { kind: 'group', ids: [1, 2, 3, 4], organizationId: null })
      for (let i = 1; i < 4; i++) {
        pending[i]?.settle.resolve(undefined)
        await flush()
      }
      if (citus) expect(pending.slice(2).map(({ ids }) => ids)).toEqual([[2], [4]])
      expect(await Promise.all(answers)).toEqual([0, 1, 2, 3, 4].map((id) => answerOf(item(id, ['a', 'b', 'a', 'b', 'c'][id]))))
    }
  })

  test('an organization being looked up holds back the items behind it; a lookup that finds none answers undefined', async () => {
    const { runners, pending, flush } = manualRunner()
    const batcher = new StatementBatcher({ enabled: true, maxItems: 10, concurrency: 1, citus: true }, runners)
    const lookup = deferred<string | null>()
    const unknown = deferred<string | null>()
    const first = batcher.run(item(0), 'a')
    const second = batcher.run(item(1), lookup.promise)
    const third = batcher.run(item(2), 'a')
    const fourth = batcher.run(item(3), unknown.promise)
    pending[0]!.settle.resolve(undefined)
    await flush()
    // The second is still being looked up: the third, of the same organization, must not overtake it.
    expect(pending).toHaveLength(1)
    unknown.resolve(null)
    expect(await fourth).toBeUndefined()
    lookup.resolve('a')
    await flush()
    expect(pending[1]).toMatchObject({ kind: 'group', ids: [1, 2], organizationId: 'a' })
    pending[1]!.settle.resolve(undefined)
    expect(await Promise.all([first, second, third])).toEqual([answerOf(item(0)), answerOf(item(1)), answerOf(item(2))])
  })

  test('a group the server refused runs again, item by item in arrival order; a lost connection rejects every item of its group', async () => {
    for (const failure of [refused('group'), lost('group')]) {
      const { runners, pending, flush } = manualRunner()
      const batcher = new StatementBatcher({ enabled: true, maxItems: 10, concurrency: 1, citus: false }, runners)
      const answers = [0, 1, 2, 3].map((id) => batcher.run(item(id), 'a').then((answer) => ({ answer }), (error) => ({ error })))
      pending[0]!.settle.resolve(undefined)
      await flush()
      pending[1]!.settle.reject(failure)
      await flush()
      if (rolledBack(failure)) {
        // One at a time: each statement starts when the one before it has answered.
        for (const id of [1, 2, 3]) {
          expect(pending.at(-1)).toMatchObject({ kind: 'one', ids: [id] })
          pending.at(-1)!.settle.resolve(undefined)
          await flush()
        }
        expect(await Promise.all(answers)).toEqual([0, 1, 2, 3].map((id) => ({ answer: answerOf(item(id)) })))
        expect(batcher.stats).toEqual({ statements: 5, items: 7, grouped: 3, retried: 3 })
      } else {
        expect(pending).toHaveLength(2)
        expect(await Promise.all(answers)).toEqual([{ answer: answerOf(item(0)) }, { error: failure }, { error: failure }, { error: failure }])
        expect(batcher.stats).toEqual({ statements: 2, items: 4, grouped: 3, retried: 0 })
      }
    }
  })

  test('turned off, every item is its own statement at once', () => {
    const { runners, pending } = manualRunner()
    const batcher = new StatementBatcher({ enabled: false, maxItems: 10, concurrency: 1, citus: false }, runners)
    for (const id of [0, 1, 2]) void batcher.run(item(id), 'a')
    expect(pending.map(({ kind }) => kind)).toEqual(['one', 'one', 'one'])
  })

  test('prepare runs before a statement, per organization; answers that need it run again after repair, those answered stay answered', async () => {
    const calls: string[] = []
    /** Items whose statement finds its row missing until repaired. */
    const missing = new Set([2, 3])
    /** The repeat of these items' group is refused. */
    let refusedRepeat = ''
    const runners: BatchRunners<Item, string> = {
      async one(it) {
        calls.push(`one ${it.id}`)
        return missing.has(it.id) ? 'missing' : answerOf(it)
      },
      async group(items) {
        calls.push(`group ${items.map((it) => it.id).join(',')}`)
        if (items.map((it) => it.id).join(',') === refusedRepeat) throw refused('repeat')
        return items.map((it) => (missing.has(it.id) ? 'missing' : answerOf(it)))
      },
      async prepare(organizationId, items) {
        calls.push(`prepare ${organizationId} ${items.map((it) => it.id).join(',')}`)
      },
      again: {
        attempts: 3,
        needed: (answer) => answer === 'missing',
        async repair(organizationId, items) {
          calls.push(`repair ${organizationId} ${items.map((it) => it.id).join(',')}`)
          for (const it of items) missing.delete(it.id)
        },
      },
    }
    const gate = deferred<void>()
    const batcher = new StatementBatcher<Item, string>({ enabled: true, maxItems: 10, concurrency: 1, citus: false }, {
      ...runners,
      one: async (it, organizationId) => (it.id === 0 ? gate.promise.then(() => runners.one(it, organizationId)) : runners.one(it, organizationId)),
    })
    const answers = [item(0), item(1), item(2, 'b'), item(3)].map((it) => batcher.run(it, it.organization))
    gate.resolve()
    expect(await Promise.all(answers)).toEqual([0, 1, 2, 3].map((id) => answerOf(item(id, id === 2 ? 'b' : 'a'))))
    expect(calls).toEqual(['prepare a 0', 'one 0', 'prepare a 1,3', 'prepare b 2', 'group 1,2,3', 'repair b 2', 'repair a 3', 'group 2,3'])

    // A repeat the server refuses runs only its own items again, alone: the others were answered.
    calls.length = 0
    missing.add(5).add(6)
    refusedRepeat = '5,6'
    const second = new StatementBatcher<Item, string>({ enabled: true, maxItems: 10, concurrency: 1, citus: false }, runners)
    const more = [item(4), item(5), item(6), item(7)].map((it) => second.run(it, 'a'))
    expect(await Promise.all(more)).toEqual([4, 5, 6, 7].map((id) => answerOf(item(id))))
    expect(calls).toEqual(['prepare a 4', 'one 4', 'prepare a 5,6,7', 'group 5,6,7', 'repair a 5,6', 'group 5,6', 'prepare a 5', 'one 5', 'prepare a 6', 'one 6'])
    expect(second.stats).toEqual({ statements: 5, items: 8, grouped: 3, retried: 2 })
  })

  test('rolledBack: a server-reported error (SQLSTATE and severity) only', () => {
    expect(rolledBack(refused('x'))).toBe(true)
    expect(rolledBack(lost('x'))).toBe(false)
    expect(rolledBack(Object.assign(new Error('x'), { code: '40P01' }))).toBe(false)
    expect(rolledBack(new Error('x'))).toBe(false)
    expect(rolledBack(undefined)).toBe(false)
  })
})
