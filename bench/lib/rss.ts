/** A running service's resident memory over time (the export and import benchmarks). */
import type { RunningProcess } from './processes'
import { round } from './stats'

/** The service's VmRSS every `everyMs` from now; the returned function stops and gives the samples ([seconds, MiB]). */
export function rssSampler(service: RunningProcess, everyMs: number): () => Array<[number, number]> {
  const started = performance.now()
  const samples: Array<[number, number]> = []
  const take = () => {
    try {
      samples.push([(performance.now() - started) / 1000, service.rssMiB()])
    } catch {
      // gone
    }
  }
  take()
  const timer = setInterval(take, everyMs)
  return () => {
    clearInterval(timer)
    take()
    return samples
  }
}

/** One sample a second (the highest of each second), for a results section. */
export const perSecond = (samples: Array<[number, number]>) => {
  const seconds: number[] = []
  for (const [at, mib] of samples) seconds[Math.floor(at)] = Math.max(seconds[Math.floor(at)] ?? 0, mib)
  return [...seconds].map((mib) => (mib === undefined ? '—' : round(mib))).join(', ')
}
