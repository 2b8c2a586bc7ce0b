/**
 * What the database was doing during a run: its commits (pg_stat_database) and its sessions'
 * statements, sampled from pg_stat_activity every 50 ms and sorted into kinds by how their text
 * begins.
 */
import postgres from 'postgres'
import { round } from './stats'

/** Commits of the database so far (its connections' statistics reach the view when they close). */
export async function commits(sql: postgres.Sql): Promise<number> {
  const [row] = await sql<Array<{ commits: string }>>`select xact_commit as commits from pg_stat_database where datname = current_database()`
  return Number(row!.commits)
}

export interface Activity {
  samples: number
  /** Sessions not idle, on average per sample. */
  busySessions: number
  /** Each kind's share of the busy-session samples, with its top waits. */
  byKind: Array<{ kind: string; share: number; waits: string }>
}

/** The sampler: called, it stops and gives the figures; paused, it samples nothing. */
export type ActivitySampler = (() => Promise<Activity>) & { pause(): void; resume(): void }

/**
 * Samples the client sessions of the database of `url` every 50 ms: an active session's kind is the
 * first of `kinds` whose pattern matches its statement's text (else its first words), an idle one
 * in transaction is "waiting for the service".
 */
export function activitySampler(url: string, kinds: Array<[RegExp, string]>): ActivitySampler {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  const name = new URL(url).pathname.slice(1)
  const counts = new Map<string, { n: number; waits: Map<string, number> }>()
  let samples = 0
  let stopped = false
  let paused = false
  const loop = (async () => {
    while (!stopped) {
      if (paused) {
        await Bun.sleep(20)
        continue
      }
      const rows = await sql<{ state: string; wait: string | null; query: string }[]>`
        select state, wait_event_type || ':' || wait_event as wait, left(query, 60) as query from pg_stat_activity
        where datname = ${name} and pid <> pg_backend_pid() and state not in ('idle') and backend_type = 'client backend'`
      samples++
      for (const row of rows) {
        const text = row.query.trim()
        const kind = row.state === 'active' ? (kinds.find(([pattern]) => pattern.test(text))?.[1] ?? `other: ${text.slice(0, 30).replace(/\s+/g, ' ')}…`) : `${row.state} (waiting for the service)`
        const entry = counts.get(kind) ?? { n: 0, waits: new Map() }
        entry.n++
        if (row.state === 'active' && row.wait) entry.waits.set(row.wait, (entry.waits.get(row.wait) ?? 0) + 1)
        counts.set(kind, entry)
      }
      await Bun.sleep(50)
    }
  })()
  const finish = async (): Promise<Activity> => {
    stopped = true
    await loop
    await sql.end()
    const total = [...counts.values()].reduce((sum, entry) => sum + entry.n, 0)
    return {
      samples,
      busySessions: total / Math.max(1, samples),
      byKind: [...counts.entries()]
        .sort((a, b) => b[1].n - a[1].n)
        .map(([kind, entry]) => ({
          kind,
          share: entry.n / Math.max(1, total),
          waits: [...entry.waits.entries()]
            .sort((a, b) => b[1] - a[1])
            .slice(0, 2)
            .map(([wait, n]) => `${wait} ${round((n / entry.n) * 100)} %`)
            .join(', '),
        })),
    }
  }
  return Object.assign(finish, { pause: () => void (paused = true), resume: () => void (paused = false) })
}

/** One Markdown table of what the sessions did in each run: the kinds that mattered most, each run's share and its top wait. */
export function activityTable(runs: Array<[string, Activity]>): string {
  const kinds = new Map<string, number>()
  for (const [, activity] of runs) for (const k of activity.byKind) kinds.set(k.kind, Math.max(kinds.get(k.kind) ?? 0, k.share))
  const top = [...kinds.entries()]
    .filter(([, share]) => share >= 0.01)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 9)
    .map(([kind]) => kind)
  const cell = (activity: Activity, kind: string) => {
    const k = activity.byKind.find((entry) => entry.kind === kind)
    return k ? `${round(k.share * 100, 1)} %${k.waits ? ` (${k.waits.split(', ')[0]})` : ''}` : '—'
  }
  return [
    `| statement | ${runs.map(([label]) => label).join(' | ')} |`,
    `|---|${runs.map(() => '---:').join('|')}|`,
    ...top.map((kind) => `| ${kind} | ${runs.map(([, activity]) => cell(activity, kind)).join(' | ')} |`),
    `| busy sessions on average (of the pool's 10) | ${runs.map(([, activity]) => round(activity.busySessions, 1)).join(' | ')} |`,
  ].join('\n')
}
