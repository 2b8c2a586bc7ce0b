/**
 * The input-fuzzing suite: for every operation of the OpenAPI document (and the routes it hides),
 * requests generated from the operation's schema and then broken in every way a client can break
 * them (generate.ts, cases.ts). Each answer must be a documented error in its family's shape,
 * never a 5xx, and no request may make the service log an unexpected error (oracle.ts); a refused
 * request must not have committed any write beyond the documented side effects (checksum.ts).
 *
 * FUZZ_RUNS (default 20000) requests in all, split over FUZZ_LANES (default: 2, or 1 on one core)
 * lanes that each run in a Worker with their own service and database, lane i from seed
 * FUZZ_SEED + i (default fixed). A failure prints the command that replays its lane alone.
 */
import { beforeAll, expect, test } from 'bun:test'
import type { LaneResult, LaneTask } from './lane'

const RUNS = Number(process.env.FUZZ_RUNS ?? 20_000)
const SEED = Number(process.env.FUZZ_SEED ?? 424242)
const LANES = Math.max(1, Number(process.env.FUZZ_LANES ?? Math.min(2, navigator.hardwareConcurrency)))

let results: LaneResult[]

/** Runs one lane in a Worker and waits for its result (a crash is an error result). */
function runLane(task: LaneTask): Promise<LaneResult> {
  return new Promise((resolve) => {
    const worker = new Worker(new URL('./lane.ts', import.meta.url).href)
    worker.onmessage = (event: MessageEvent<LaneResult>) => {
      resolve(event.data)
      worker.terminate()
    }
    worker.onerror = (event) => {
      resolve({ error: `lane ${task.seed - SEED} crashed: ${event.message}` })
      worker.terminate()
    }
    worker.postMessage(task)
  })
}

beforeAll(async () => {
  const perLane = Math.ceil(RUNS / LANES)
  results = await Promise.all(Array.from({ length: LANES }, (_, lane) => runLane({ runs: perLane, seed: SEED + lane, selfTest: lane === 0 })))
}, 240_000)

const reports = () => results.map((result) => ('error' in result ? Promise.reject(new Error(result.error)) : result))

test('the change log sees every committed write, and neither rolled-back writes nor bookkeeping', async () => {
  const [first] = await Promise.all(reports())
  expect(first!.selfTest).toEqual({ committed: ['UPDATE teams'], ignored: [], edited: ['UPDATE api_keys', 'UPDATE api_keys'] })
})

test(`${RUNS} fuzzed requests: no 5xx, documented errors in their family's shape, nothing logged as unexpected, and refused requests change nothing`, async () => {
  const lanes = await Promise.all(reports())
  for (const { report, setupSeconds } of lanes) {
    const statuses = Object.entries(report.byStatus).map(([status, count]) => `${status}:${count}`).join(' ')
    console.log(`fuzz lane (seed ${report.seed}): set up in ${setupSeconds.toFixed(1)} s, ${report.sent} requests in ${report.seconds.toFixed(1)} s: ${report.unchanged} refused or read-only and checked unchanged, ${report.changed} successful writes; statuses ${statuses}`)
  }
  const failures = lanes.flatMap(({ report }) => (report.failure ? [report.failure] : []))
  if (failures.length) throw new Error(failures.join('\n\n'))
  const sum = (pick: (report: (typeof lanes)[number]['report']) => number) => lanes.reduce((total, lane) => total + pick(lane.report), 0)
  expect(sum((report) => report.sent)).toBeGreaterThanOrEqual(RUNS)
  // The mix reaches both sides: most requests are refused, and some succeed (deep paths ran).
  expect(sum((report) => report.unchanged)).toBeGreaterThan(RUNS / 2)
  expect(sum((report) => report.changed)).toBeGreaterThan(RUNS / 100)
})
