/**
 * The processes a benchmark drives: the service (entries/bun.ts, with a config of the benchmark's
 * own), the small servers of bench/servers/ (the hello-world ceiling, the answer server), and any
 * other script; each answers on its port before the benchmark goes on, and stops on SIGTERM.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs'

/**
 * The engine's heap sizing `npm start` and the container image give the service (package.json's
 * "start" script, the Dockerfile): JavaScriptCore collects as on a machine of 512 MiB.
 */
export const SERVICE_HEAP_ENV = { BUN_JSC_forceRAMSize: '536870912' }

export interface RunningProcess {
  pid: number
  port: number
  /** Peak resident set size so far, in MiB (VmHWM). */
  peakRssMiB(): number
  /** Resident set size now, in MiB (VmRSS). */
  rssMiB(): number
  /** SIGTERM, then SIGKILL and an error if it has not exited within 20 s (a worker stuck). */
  stop(): Promise<void>
}

/** A memory figure of /proc/<pid>/status (VmRSS, VmHWM…) in MiB. */
function statusMiB(pid: number, field: string): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) / 1024
}

/** Starts `command` with PORT set and waits for `readyPath` to answer 200 (with the service's heap sizing, unless the environment sets one); `cleanup` runs once it has exited. */
export async function startProcess(command: string[], env: Record<string, string>, port: number, readyPath = '/health', cleanup: () => void = () => {}): Promise<RunningProcess> {
  const child = Bun.spawn(command, { env: { ...SERVICE_HEAP_ENV, ...process.env, LOG_LEVEL: 'warn', ...env, PORT: String(port) }, stdout: 'ignore', stderr: 'inherit' })
  const deadline = Date.now() + 60_000
  for (;;) {
    if (child.exitCode !== null) {
      cleanup()
      throw new Error(`${command.join(' ')} exited with ${child.exitCode}`)
    }
    try {
      if ((await fetch(`http://127.0.0.1:${port}${readyPath}`)).ok) break
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      cleanup()
      throw new Error(`${command.join(' ')} did not answer within 60 s`)
    }
    await Bun.sleep(200)
  }
  let stopping: Promise<void> | undefined
  return {
    pid: child.pid,
    port,
    peakRssMiB: () => statusMiB(child.pid, 'VmHWM'),
    rssMiB: () => statusMiB(child.pid, 'VmRSS'),
    stop: () =>
      (stopping ??= (async () => {
        child.kill('SIGTERM')
        const exited = await Promise.race([child.exited.then(() => true), Bun.sleep(20_000).then(() => false)])
        cleanup()
        if (!exited) {
          child.kill('SIGKILL')
          throw new Error(`${command.join(' ')} did not stop within 20 s of SIGTERM (killed)`)
        }
      })()),
  }
}

export interface ServiceOptions {
  /** service.config.json content (none: the defaults). */
  config?: Record<string, unknown>
  /** Flags for Bun before the entry (the profiler's). */
  bunFlags?: string[]
  env?: Record<string, string>
}

/** The service as `npm start` runs it (entries/bun.ts) on the database `url`, answering on `port`. */
export async function startService(url: string, port: number, options: ServiceOptions = {}): Promise<RunningProcess> {
  const config = options.config ? `/tmp/worktrack-bench-${process.pid}-${port}.json` : ''
  if (config) writeFileSync(config, JSON.stringify(options.config))
  return startProcess([process.execPath, ...(options.bunFlags ?? []), 'entries/bun.ts'], { DATABASE_URL: url, SERVICE_CONFIG: config, ...options.env }, port, '/health', () => {
    if (config) rmSync(config, { force: true })
  })
}

/** One of bench/servers/ (`hello`: the Elysia hello-world; `answer`: fixed answers after an `await`), answering on `port`. */
export function startServer(name: 'hello' | 'answer', port: number, env: Record<string, string> = {}): Promise<RunningProcess> {
  return startProcess([process.execPath, `bench/servers/${name}.ts`], env, port, '/')
}

/** The list cache's size the benchmarks give the service when they want it on (the default's order). */
export const LIST_CACHE_BYTES = 64 * 1024 * 1024
