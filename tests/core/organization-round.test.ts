/**
 * The round the outbox workers take organizations from (src/organization-round.ts): each
 * organization tried goes to the back, one whose claim came back short leaves, a discovery adds
 * the organizations it finds (one at a time however many workers ask), announced work without an
 * organization makes the next turn discover, never sooner than the gap after the last.
 */
import { describe, expect, test } from 'bun:test'
import { OrganizationRound } from '../../src/organization-round'

/** A round whose discoveries answer `found` (changeable) and are counted. */
function roundOf(found: string[], options: { rediscoverAfterMs?: number; minGapMs?: number } = {}) {
  const state = { found, discoveries: 0, fail: false }
  const round = new OrganizationRound(
    async () => {
      state.discoveries++
      if (state.fail) throw new Error('discovery failed')
      return state.found
    },
    options.rediscoverAfterMs ?? 60_000,
    options.minGapMs ?? 10,
  )
  return { round, state }
}

describe('organization round', () => {
  test('the first turn discovers; an organization tried goes to the back, one that came back short leaves, and the busy one cannot stay in front', async () => {
    const { round, state } = roundOf(['busy', 'quiet', 'third'])
    expect(await round.turn()).toEqual(['busy', 'quiet', 'third'])
    round.tried('busy', true)
    expect(await round.turn()).toEqual(['quiet', 'third', 'busy'])
    round.tried('quiet', false)
    round.tried('third', true)
    expect(await round.turn()).toEqual(['busy', 'third'])
    // Announced work of an organization in the round keeps its place; a new one joins at the back.
    round.add('busy')
    round.add('quiet')
    expect(await round.turn()).toEqual(['busy', 'third', 'quiet'])
    expect(state.discoveries).toBe(1)
  })

  test('workers asking at once share one discovery; a discovery older than rediscoverAfterMs is made again', async () => {
    const { round, state } = roundOf(['a'], { rediscoverAfterMs: 30, minGapMs: 30 })
    const turns = await Promise.all([round.turn(), round.turn(), round.turn()])
    expect(turns).toEqual([['a'], ['a'], ['a']])
    expect(state.discoveries).toBe(1)
    round.tried('a', false)
    expect(await round.turn()).toEqual([])
    state.found = ['b']
    const started = performance.now()
    let turn: string[] = []
    while (!turn.length && performance.now() - started < 5_000) {
      await Bun.sleep(5)
      turn = await round.turn()
    }
    expect(turn).toEqual(['b'])
    expect(performance.now() - started).toBeGreaterThanOrEqual(25)
    expect(state.discoveries).toBe(2)
  })

  test('work announced without its organization makes the next turn discover, after the gap since the last discovery', async () => {
    const { round, state } = roundOf([], { minGapMs: 50 })
    expect(await round.turn()).toEqual([])
    state.found = ['x']
    const announced = performance.now()
    round.stale()
    expect(await round.turn()).toEqual(['x'])
    expect(performance.now() - announced).toBeGreaterThanOrEqual(40)
    expect(state.discoveries).toBe(2)
    // Not stale any more: no discovery.
    expect(await round.turn()).toEqual(['x'])
    expect(state.discoveries).toBe(2)
  })

  test('a failed discovery fails the turn, and the next turn discovers again', async () => {
    const { round, state } = roundOf(['a'])
    state.fail = true
    await expect(round.turn()).rejects.toThrow('discovery failed')
    state.fail = false
    expect(await round.turn()).toEqual(['a'])
    expect(state.discoveries).toBe(2)
  })

  test('a claim shares what is wanted among the organizations of a turn, a few at once, and asks again those that filled their share', async () => {
    const { round } = roundOf(['busy', 'quiet', 'third'])
    const available = new Map([
      ['busy', 100],
      ['quiet', 1],
      ['third', 0],
    ])
    const asked: Array<[string, number]> = []
    const claimIn = async (organizationId: string, wanted: number) => {
      asked.push([organizationId, wanted])
      const taken = Math.min(wanted, available.get(organizationId)!)
      available.set(organizationId, available.get(organizationId)! - taken)
      return taken
    }
    expect(await round.claim(16, 2, claimIn, () => {})).toBe(16)
    // Waves of two: busy 8 and quiet 8 (1 there); the 7 left: third 4 (none) and busy again 3; then busy alone the 4 left.
    expect(asked).toEqual([
      ['busy', 8],
      ['quiet', 8],
      ['third', 4],
      ['busy', 3],
      ['busy', 4],
    ])
    // quiet and third came back short and left the round; busy is in it.
    expect(await round.turn()).toEqual(['busy'])
  })

  test('a failed claim fails the whole only when nothing was claimed', async () => {
    const { round } = roundOf(['a', 'b'])
    const errors: unknown[] = []
    const boom = new Error('claim failed')
    expect(await round.claim(10, 2, async (organizationId) => (organizationId === 'a' ? 3 : Promise.reject(boom)), (error) => errors.push(error))).toBe(3)
    expect(errors).toEqual([boom])
    await expect(round.claim(10, 2, async () => Promise.reject(boom), () => {})).rejects.toThrow('claim failed')
  })
})
