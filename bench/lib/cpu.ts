/**
 * The CPU meter, read from /proc: a process's CPU time (user and kernel), every PostgreSQL
 * process's, the whole machine's (busy, and what the hypervisor took: steal), and this process's
 * own. One meter serves every benchmark: the share the host stole during a benchmark (beside each
 * section's machine line), the server's CPU per answer (answers), and where a run's cores went
 * (webhooks).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { cpus } from 'node:os'

/** /proc's clock ticks per second (USER_HZ). */
export const TICKS_PER_SECOND = 100

/** CPU time of a process so far, in ticks, user and kernel (zeros once it is gone). */
export function processTicks(pid: number | string): { user: number; kernel: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name (in brackets) may hold spaces: the fields start after its closing bracket.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return { user: Number(fields[11]), kernel: Number(fields[12]) }
  } catch {
    return { user: 0, kernel: 0 }
  }
}

const ticksOf = (pid: number | string) => {
  const { user, kernel } = processTicks(pid)
  return user + kernel
}

/** The machine's CPU time so far (/proc/stat's first line, in ticks): all of it, the busy part, and steal. */
export function machineTicks(): { total: number; busy: number; steal: number } | undefined {
  if (!existsSync('/proc/stat')) return undefined
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
  const total = fields.slice(0, 8).reduce((sum, each) => sum + each, 0)
  return { total, busy: total - fields[3]! - fields[4]!, steal: fields[7] ?? 0 }
}

/** CPU ticks of every PostgreSQL process by pid (backends that ended meanwhile are lost, new ones start at 0). */
function postgresTicks(): Map<string, number> {
  const ticks = new Map<string, number>()
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') ticks.set(pid, ticksOf(pid))
    } catch {
      // gone
    }
  }
  return ticks
}

/** Cores in use over a window: CPU seconds per wall second. */
export interface CpuShare {
  seconds: number
  /** The service, PostgreSQL, this process (its client and receivers) and the rest (wrk…). */
  service: number
  postgres: number
  bench: number
  other: number
  /** Machine-wide cores busy. */
  busy: number
}

/** Starts measuring where the cores go; the returned function gives the shares since. */
export function cpuMeter(servicePid: number): () => CpuShare {
  const started = performance.now()
  const serviceBefore = ticksOf(servicePid)
  const postgresBefore = postgresTicks()
  const benchBefore = process.cpuUsage()
  const machineBefore = machineTicks()
  return () => {
    const seconds = (performance.now() - started) / 1000
    const serviceSeconds = (ticksOf(servicePid) - serviceBefore) / TICKS_PER_SECOND
    let postgresSeconds = 0
    for (const [pid, ticks] of postgresTicks()) postgresSeconds += (ticks - (postgresBefore.get(pid) ?? 0)) / TICKS_PER_SECOND
    const bench = process.cpuUsage(benchBefore)
    const benchSeconds = (bench.user + bench.system) / 1e6
    const machineAfter = machineTicks()
    const busyShare = machineBefore && machineAfter ? (machineAfter.busy - machineBefore.busy) / Math.max(1, machineAfter.total - machineBefore.total) : 0
    const busySeconds = busyShare * seconds * cpus().length
    return {
      seconds,
      service: serviceSeconds / seconds,
      postgres: postgresSeconds / seconds,
      bench: benchSeconds / seconds,
      other: Math.max(0, busySeconds - serviceSeconds - postgresSeconds - benchSeconds) / seconds,
      busy: busySeconds / seconds,
    }
  }
}

/** The mean of CPU shares measured over several windows, weighted by their lengths. */
export function mergeCpu(shares: CpuShare[]): CpuShare {
  const seconds = shares.reduce((sum, c) => sum + c.seconds, 0)
  const mean = (field: keyof CpuShare) => shares.reduce((sum, c) => sum + c[field] * c.seconds, 0) / seconds
  return { seconds, service: mean('service'), postgres: mean('postgres'), bench: mean('bench'), other: mean('other'), busy: mean('busy') }
}

let benchmarkStart = machineTicks()

/** Marks the start of a benchmark (bench/run.ts): `stolenShare()` then counts from here. */
export function markBenchmarkStart(): void {
  benchmarkStart = machineTicks()
}

/** The share (%) of the machine's CPU time the hypervisor took since the benchmark began: a shared host's noise, said beside the figures. */
export function stolenShare(): number | undefined {
  const now = machineTicks()
  if (!now || !benchmarkStart || now.total <= benchmarkStart.total) return undefined
  return Math.round(((now.steal - benchmarkStart.steal) / (now.total - benchmarkStart.total)) * 100)
}
