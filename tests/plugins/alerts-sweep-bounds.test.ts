/**
 * The alert sweep's work is bounded however many rules there are (plugins/alerts/sweep.ts): one
 * sweep evaluates at most alerts.sweepMaxRules rules, at most alerts.sweepMaxRulesPerOrganization
 * of one organization; organizations take turns, the one evaluated longest ago first, so each is
 * reached within a bounded number of sweeps and every rule in the end; and an organization holds at
 * most alerts.maxAlertsPerOrganization rules (one more is 409). Sweeps are driven one by one here
 * (`runOnce` of the plugin's runner, whose own workers are off); every rule's data is old, so each
 * rule a sweep evaluates fires, and the transitions count what it evaluated.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { OutboxRunner } from '../../src/outbox-runner'
import { timeLimit, sqlOn } from '../helpers/database'
import { createDisplayFixture, type DisplayFixture } from '../helpers/display-fixture'
import { startTestService, type TestService } from '../helpers/service'

const PER_SWEEP = 8
const PER_ORGANIZATION_PER_SWEEP = 5
const PER_ORGANIZATION = 12
const ORGANIZATIONS = 4

let api: TestService
let sweep: OutboxRunner
let boards: DisplayFixture[]

const sql = sqlOn(() => api)

/** `count` noData rules on the board's components, created an hour ago on components never fed: each holds. */
async function oldNoDataRules(board: DisplayFixture, count: number): Promise<void> {
  const components = Object.values(board.components)
  for (let i = 0; i < count; i++)
    await sql(
      `insert into component_alerts (id, organization_id, page_id, component_id, kind, for_seconds, created_at)
        values (gen_random_uuid(), $1, $2, $3, 'noData', 60, now() - interval '1 hour')`,
      [board.organizationId, board.pageId, components[i % components.length]],
    )
}

/** Transitions so far, per organization of the boards. */
async function firedPerOrganization(): Promise<number[]> {
  const rows = await sql<{ organizationId: string; fired: number }>(
    `select organization_id as "organizationId", count(*)::int as fired from alert_transitions where organization_id = any($1::uuid[]) and transition = 'fired' group by organization_id`,
    [boards.map((board) => board.organizationId)],
  )
  return boards.map((board) => rows.find((row) => row.organizationId === board.organizationId)?.fired ?? 0)
}

beforeAll(async () => {
  api = await startTestService({
    config: {
      alerts: {
        workers: false,
        sweepIntervalSeconds: 3600,
        sweepMaxRules: PER_SWEEP,
        sweepMaxRulesPerOrganization: PER_ORGANIZATION_PER_SWEEP,
        maxAlertsPerOrganization: PER_ORGANIZATION,
      },
    },
  })
  sweep = (api.service.contextOf('alerts').bound as { sweep: OutboxRunner }).sweep
  boards = []
  for (let i = 0; i < ORGANIZATIONS; i++) boards.push(await createDisplayFixture(api))
}, timeLimit(60_000))
afterAll(() => api.stop())

describe('the alert sweep', () => {
  test('evaluates at most its limits per sweep, every organization within a bounded number of sweeps and every rule in the end', async () => {
    for (const board of boards) await oldNoDataRules(board, PER_ORGANIZATION)
    const total = ORGANIZATIONS * PER_ORGANIZATION
    // A sweep gives turns to at least ⌈8 / 5⌉ = 2 organizations (none takes more than 5): the 4 are all reached within 2 sweeps.
    const reachedWithin = Math.ceil(ORGANIZATIONS / Math.ceil(PER_SWEEP / PER_ORGANIZATION_PER_SWEEP))
    // Its last sweeps may leave part of the limit unused (one turn per organization a sweep): one more than the least possible.
    const doneWithin = Math.ceil(total / PER_SWEEP) + 1
    let before = await firedPerOrganization()
    const firstFiredIn: Array<number | undefined> = boards.map(() => undefined)
    let sweeps = 0
    while (before.reduce((sum, fired) => sum + fired, 0) < total && sweeps < 2 * doneWithin) {
      const { handled } = await sweep.runOnce()
      sweeps++
      const after = await firedPerOrganization()
      const added = after.map((fired, i) => fired - before[i]!)
      expect(handled).toBe(added.reduce((sum, fired) => sum + fired, 0))
      expect(handled).toBeLessThanOrEqual(PER_SWEEP)
      for (const [i, fired] of added.entries()) {
        expect(fired).toBeLessThanOrEqual(PER_ORGANIZATION_PER_SWEEP)
        if (fired && firstFiredIn[i] === undefined) firstFiredIn[i] = sweeps
      }
      before = after
    }
    expect(before).toEqual(boards.map(() => PER_ORGANIZATION))
    expect(sweeps).toBeLessThanOrEqual(doneWithin)
    for (const sweepNumber of firstFiredIn) expect(sweepNumber).toBeLessThanOrEqual(reachedWithin)
    // Nothing is left: the next sweep evaluates nothing.
    expect((await sweep.runOnce()).handled).toBe(0)
  })

  test('creating one rule past alerts.maxAlertsPerOrganization is 409 naming the limit, counting the rules of all its components; deleting one makes room', async () => {
    const board = await createDisplayFixture(api)
    const create = (componentId: string) => api.request('POST', `/api/v1/pages/${board.pageId}/components/${componentId}/alerts`, { key: board.creatorKey, body: { when: 'above', value: 90 } })
    const components = Object.values(board.components)
    for (let i = 0; i < PER_ORGANIZATION; i++) expect((await create(components[i % components.length]!)).status).toBe(201)
    // Its last component holds only 2 rules (of 20 a component may have): the organization is full.
    const refused = await create(components.at(-1)!)
    expect(refused.status).toBe(409)
    expect(refused.body.errors[0]).toMatchObject({ code: 'CONFLICT', message: `An organization has at most ${PER_ORGANIZATION} alerts (alerts.maxAlertsPerOrganization); delete one first.` })
    const [{ held }] = (await sql<{ held: number }>('select count(*)::int as held from component_alerts where organization_id = $1', [board.organizationId])) as [{ held: number }]
    expect(held).toBe(PER_ORGANIZATION)
    // Deleting one makes room for one.
    const [first] = await sql<{ id: string; componentId: string }>('select id, component_id as "componentId" from component_alerts where organization_id = $1 limit 1', [board.organizationId])
    expect((await api.request('DELETE', `/api/v1/pages/${board.pageId}/components/${first!.componentId}/alerts/${first!.id}`, { key: board.creatorKey })).status).toBe(200)
    expect((await create(components.at(-1)!)).status).toBe(201)
  })
})
