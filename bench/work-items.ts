/**
 * Work items: the list (`size=100`) against pgbench running the same two statements, and
 * project search latency at 10k and at 1M work items + entries (all in one project, the worst
 * case). Targets: list ≥ 0.7 of pgbench; search p99 ≤ 50 ms at 1M, growing < 3× from 10k.
 */
import { openDatabase } from '../src/db'
import { migrate } from '../src/migrate'
import { MEMBER_ACCESS } from '../plugins/projects/access'
import { WORK_ITEM_COLUMNS } from '../plugins/work-items/model'
import { asPgbench, autocannon, CONNECTIONS, DURATION_SECONDS, freshDatabase, machine, pgbench, recordResult, round, startProcess, writeSection } from './lib'
import { seedOrganization, type Seeded } from './seed'
import { seedWork, VOCABULARY } from './seed-work'

/** The two statements the service runs for one list request, taken from the service itself. */
const LIST_SQL = [
  asPgbench(MEMBER_ACCESS, ['project', 'org', 'user']),
  asPgbench(`select ${WORK_ITEM_COLUMNS}, count(*) over () as total from work_items w where w.project_id = $1 order by w.position, w.created_at, w.id limit 100 offset 0`, ['project']),
].join('\n')

async function prepare(name: string, counts: { workItems: number; entries: number }): Promise<{ url: string; seeded: Seeded; seconds: number }> {
  const url = await freshDatabase(name)
  const database = await openDatabase(url)
  await migrate(database.db)
  const seeded = await seedOrganization(database.db, { scopes: ['work_items:read', 'entries:read', 'relationships:read'] })
  const started = performance.now()
  await seedWork(database.db, seeded, counts)
  await database.close()
  return { url, seeded, seconds: (performance.now() - started) / 1000 }
}

/** A fixed, mixed set of queries: whole words, word pairs, prefixes and inner substrings. */
function searchQueries(count: number): string[] {
  let seed = 42
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
  const word = () => VOCABULARY[Math.floor(next() * VOCABULARY.length)]!
  return Array.from({ length: count }, (_, i) => {
    switch (i % 6) {
      case 0:
      case 1:
      case 2:
        return word()
      case 3:
        return `${word()} ${word()}`
      case 4:
        return word().slice(0, 4)
      default:
        return word().slice(1, 5)
    }
  })
}

interface Latency {
  p50: number
  p99: number
  max: number
  requestsPerSecond: number
}

async function measureSearch(port: number, seeded: Seeded, connections: number): Promise<Latency> {
  const queries = searchQueries(600)
  const headers = { authorization: `Bearer ${seeded.secret}` }
  const url = (q: string) => `http://127.0.0.1:${port}/api/v1/projects/${seeded.projectId}/search?q=${encodeURIComponent(q)}&limit=20`
  for (const q of queries.slice(0, 30)) await (await fetch(url(q), { headers })).text() // warm-up
  const timings: number[] = []
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (next < queries.length) {
        const q = queries[next++]!
        const t0 = performance.now()
        const response = await fetch(url(q), { headers })
        await response.text()
        if (response.status !== 200) throw new Error(`search answered ${response.status}`)
        timings.push(performance.now() - t0)
      }
    }),
  )
  const elapsed = (performance.now() - started) / 1000
  timings.sort((a, b) => a - b)
  const at = (p: number) => timings[Math.min(timings.length - 1, Math.floor(p * timings.length))]!
  return { p50: at(0.5), p99: at(0.99), max: timings.at(-1)!, requestsPerSecond: timings.length / elapsed }
}

export async function benchWorkItems(): Promise<void> {
  // The list against pgbench.
  const list = await prepare('worktrack_bench_list', { workItems: 100, entries: 0 })
  const service = await startProcess([process.execPath, 'entries/bun.ts'], { DATABASE_URL: list.url, SERVICE_CONFIG: '/nonexistent.json' }, 3831)
  let listResult, ceiling10, ceiling64, rss
  try {
    const url = `http://127.0.0.1:3831/api/v1/projects/${list.seeded.projectId}/work-items?size=100`
    const headers = { authorization: `Bearer ${list.seeded.secret}` }
    await autocannon(url, { headers, duration: 2 })
    listResult = await autocannon(url, { headers })
    rss = service.peakRssMiB()
    const variables = { user: list.seeded.userId, project: list.seeded.projectId, org: list.seeded.organizationId }
    ceiling64 = await pgbench(list.url, LIST_SQL, { variables })
    ceiling10 = await pgbench(list.url, LIST_SQL, { variables, clients: 10 })
  } finally {
    await service.stop()
  }
  const ceiling = Math.max(ceiling10, ceiling64)

  // Search at two sizes.
  const sizes = [
    { label: '10k', counts: { workItems: 5_000, entries: 5_000 } },
    { label: '1M', counts: { workItems: Number(process.env.BENCH_SEARCH_ITEMS ?? 500_000), entries: Number(process.env.BENCH_SEARCH_ENTRIES ?? 500_000) } },
  ]
  // Smaller sizes (BENCH_SEARCH_ITEMS / _ENTRIES, for smoke runs) are labelled as what they are.
  const largeRows = sizes[1]!.counts.workItems + sizes[1]!.counts.entries
  if (largeRows !== 1_000_000) sizes[1]!.label = largeRows >= 1_000_000 ? `${round(largeRows / 1_000_000, 1)}M` : `${round(largeRows / 1000)}k`
  const search: Array<{ label: string; rows: number; seedSeconds: number; one: Latency; eight: Latency }> = []
  for (const size of sizes) {
    const prepared = await prepare(`worktrack_bench_search_${size.label.toLowerCase()}`, size.counts)
    const searchService = await startProcess([process.execPath, 'entries/bun.ts'], { DATABASE_URL: prepared.url, SERVICE_CONFIG: '/nonexistent.json' }, 3832)
    try {
      search.push({
        label: size.label,
        rows: size.counts.workItems + size.counts.entries,
        seedSeconds: prepared.seconds,
        one: await measureSearch(3832, prepared.seeded, 1),
        eight: await measureSearch(3832, prepared.seeded, 8),
      })
    } finally {
      await searchService.stop()
    }
  }
  const [small, large] = search as [(typeof search)[0], (typeof search)[0]]
  const date = new Date().toISOString()
  writeSection(
    'work-items',
    `## Work items: list vs pgbench, and search latency at 10k and 1M rows

- Date: ${date} · Machine: ${machine()}
- Command: \`npm run bench -- work-items\` (list: autocannon ${CONNECTIONS} connections ${DURATION_SECONDS} s, pgbench \`-M prepared\` with the service's two statements; search: 600 fixed queries — whole words, word pairs, 4-letter prefixes, inner substrings — from a 2,000-word vocabulary, at 1 and 8 concurrent clients, everything in one project)

| list \`GET …/work-items?size=100\` | figure |
|---|---:|
| endpoint req/s | ${round(listResult.requestsPerSecond)} |
| endpoint p50 / p99 ms | ${listResult.p50} / ${listResult.p99} |
| endpoint peak RSS MiB | ${round(rss, 1)} |
| pgbench TPS (10 clients / 64 clients) | ${round(ceiling10)} / ${round(ceiling64)} |
| **ratio to the higher pgbench figure** (target ≥ 0.7) | **${round(listResult.requestsPerSecond / ceiling, 2)}** |

| search | rows | seeding | p50 ms (1 client) | p99 ms (1 client) | p50 / p99 ms (8 clients) | req/s (8 clients) |
|---|---:|---:|---:|---:|---:|---:|
${search.map((s) => `| ${s.label} | ${round(s.rows)} | ${round(s.seedSeconds)} s | ${round(s.one.p50, 1)} | ${round(s.one.p99, 1)} | ${round(s.eight.p50, 1)} / ${round(s.eight.p99, 1)} | ${round(s.eight.requestsPerSecond)} |`).join('\n')}

**Search p99 at ${large.label}: ${round(large.one.p99, 1)} ms** (target ≤ 50 ms); growth from ${small.label}: **${round(large.one.p99 / small.one.p99, 2)}×** (target ≤ 3×).`,
  )
  recordResult('work-items', {
    date,
    machine: machine(),
    command: 'npm run bench -- work-items',
    figures: {
      list: { requestsPerSecond: listResult.requestsPerSecond, p50: listResult.p50, p99: listResult.p99 },
      peakRssMiB: rss,
      pgbench10: ceiling10,
      pgbench64: ceiling64,
      search: search.map((s) => ({ label: s.label, rows: s.rows, p50: s.one.p50, p99: s.one.p99 })),
    },
  })
  console.log(`work-items: list ${round(listResult.requestsPerSecond)} req/s vs pgbench ${round(ceiling)}; search p99 ${round(small.one.p99, 1)} → ${round(large.one.p99, 1)} ms`)
}
