/**
 * One fuzzing lane, run in a Worker: its own service, database, world and change log, so lanes
 * share nothing and run on separate cores. Receives `{runs, seed, selfTest}`, answers
 * `{report, selfTest}` or `{error}`.
 */
import { pgliteTemplate, usingServer } from '../helpers/database'
import { startTestService } from '../helpers/service'
import { Fuzzer, type FuzzReport } from './harness'
import { errorRecorder, type LoggedError } from './logged'

export interface LaneTask {
  runs: number
  seed: number
  /** Also check the change log against known writes first (one lane does). */
  selfTest: boolean
}

export type LaneResult =
  | { report: FuzzReport; selfTest: Awaited<ReturnType<Fuzzer['selfTest']>> | null; setupSeconds: number }
  | { error: string }

declare const self: Worker

// What tests/setup.ts does for the main thread (a Worker does not run the preload).
process.env.LOG_LEVEL ??= 'silent'
delete process.env.GOOGLE_APPLICATION_CREDENTIALS

self.onmessage = async (event: MessageEvent<LaneTask>) => {
  const task = event.data
  let result: LaneResult
  try {
    const started = Date.now()
    if (!usingServer()) await pgliteTemplate()
    // One trusted proxy hop, so hostile X-Forwarded-For values reach the client-address code;
    // no webhook delivery workers (fuzzed webhooks would otherwise be sent to real addresses), and
    // no alert sweep and no notification fan-out (each writes, after the commit of an earlier
    // request, while a refused request is in flight, which the change log would charge to it).
    const logged: LoggedError[] = []
    const api = await startTestService({ config: { server: { trustProxy: 1 }, webhooks: { workers: false }, alerts: { workers: false }, notifications: { workers: false } }, log: errorRecorder(logged) })
    try {
      const fuzzer = new Fuzzer(api, logged)
      try {
        await fuzzer.setup()
        const setupSeconds = (Date.now() - started) / 1000
        const selfTest = task.selfTest ? await fuzzer.selfTest() : null
        result = { report: await fuzzer.run(task.runs, task.seed), selfTest, setupSeconds }
      } finally {
        await fuzzer.close()
      }
    } finally {
      await api.stop()
    }
  } catch (error) {
    result = { error: error instanceof Error ? (error.stack ?? error.message) : String(error) }
  }
  postMessage(result)
}
