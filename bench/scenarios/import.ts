/**
 * A project's import (`POST /api/v1/projects/{projectId}/import`, NDJSON as the export writes it,
 * all or nothing in one transaction, work items in batches of 1,000 rows) through the real service
 * (entries/bun.ts) on a fresh database of the PostgreSQL server (bench/seed/import.ts: one
 * organization, its owner's key, five labels, empty projects the owner owns), in one run:
 * - an NDJSON file (bench/tmp/) of BENCH_IMPORT_ITEMS work items (default 100,000: the body stays
 *   under the import's 64 MiB) with N/10 entries and N/100 relationships, in the export's shape;
 * - one untimed warm-up import of a small file (1,000 work items), then the file POSTed by curl
 *   (`--data-binary @file`) into a new empty project 3 times: curl's time_total, the service's
 *   VmRSS every 100 ms and VmHWM, where the cores went, what the database sessions did
 *   (pg_stat_activity every 50 ms) and when the first insert was seen (before it: the body read and
 *   parsed); after each, the project's rows counted by SQL (work items, labels on them, assignees,
 *   entries, relationships, the counter) and the maintained counts (work_item_counts per status,
 *   entry_counts per work item and kind, relationship_counts per type) compared with the rows, then
 *   every work item truncated and a checkpoint taken, so each run starts from the same state;
 * - the database ceiling, the service stopped: psql `\copy` of the same values (CSV, new ids) into
 *   another empty project, the four tables and the maintained counts in one transaction, twice
 *   (two projects); the better run.
 */
import { mkdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { ImportCeiling, ImportRun } from '../figures'
import { cpuMeter, type CpuShare } from '../lib/cpu'
import { dropDatabase, seededDatabase, withClient } from '../lib/database'
import { activitySampler, activityTable, type Activity } from '../lib/pg-activity'
import { startService, type RunningProcess } from '../lib/processes'
import { perSecond, rssSampler } from '../lib/rss'
import { recordResult, sectionHead, serviceCommit, writeSection } from '../lib/results'
import { fitSlope, round } from '../lib/stats'
import { countDifferences } from '../seed/growth'
import { IMPORT_LABELS, IMPORT_SCOPES, seedImportOrganization, writeImportCsvs, writeImportNdjson, type ImportFile, type ImportOrganization } from '../seed/import'
import { LIMITS, TARGETS } from '../targets'

export const name = 'import'
export const target = TARGETS[name]

const ITEMS = Number(process.env.BENCH_IMPORT_ITEMS ?? 100_000)
const RUNS = 3
const CEILING_RUNS = 2
const WARMUP_ITEMS = 1_000
const PORT = 3879
const SAMPLE_MS = 100
const TMP = join(import.meta.dir, '..', 'tmp')
const MiB = 1024 * 1024
const MAX_BODY = 64 * MiB
/** Load average above which a timed run waits (polled), at most LOAD_WAIT_SECONDS. */
const LOAD_LIMIT = 3
const LOAD_WAIT_SECONDS = 300

/** What the sessions' statements are, by how their text begins (pg_stat_activity keeps 60 characters here). */
const STATEMENTS: Array<[RegExp, string]> = [
  [/^insert into "?work_items"? /i, 'insert of 1,000 work items'],
  [/^insert into "?work_item_labels"? /i, 'insert of their labels'],
  [/^insert into "?entries"? /i, 'insert of entries'],
  [/^insert into "?entry_counts"? /i, 'entry counts'],
  [/^insert into "?relationships"? /i, 'insert of relationships'],
  [/^insert into "?work_item_counts"? /i, 'work item counts'],
  [/^(begin|commit|rollback)/i, 'begin / commit'],
]

const loadAverage = () => Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0])

/** Waits (polling) while the machine's 1-minute load is above LOAD_LIMIT, at most LOAD_WAIT_SECONDS; the load it starts at. */
async function quiet(label: string): Promise<number> {
  const started = performance.now()
  let load = loadAverage()
  while (load > LOAD_LIMIT && (performance.now() - started) / 1000 < LOAD_WAIT_SECONDS) {
    console.log(`import: load ${load} before ${label}, waiting`)
    await Bun.sleep(15_000)
    load = loadAverage()
  }
  return load
}


/** Seconds from now until a session of the database is first seen running an insert or idle in a transaction (the import writing), polled every 20 ms until `done` resolves; null if never seen. */
function firstWrite(url: string, done: Promise<unknown>): Promise<number | null> {
  let finished = false
  void done.finally(() => (finished = true))
  const started = performance.now()
  return withClient(url, async (client) => {
    while (!finished) {
      const [row] = await client`select 1 from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'
                                  and ((state = 'active' and query ilike 'insert%') or state = 'idle in transaction') limit 1`
      if (row) return (performance.now() - started) / 1000
      await Bun.sleep(20)
    }
    return null
  })
}

/** curl POSTing `file` to the project's import: its figures and the answer. */
async function postImport(file: string, projectId: string, secret: string) {
  const out = join(TMP, `import-answer-${process.pid}.json`)
  const curl = Bun.spawn(
    ['curl', '-sS', '-o', out, '-w', '%{time_total} %{http_code} %{size_upload}', '-H', `authorization: Bearer ${secret}`, '-H', 'content-type: application/x-ndjson', '--data-binary', `@${file}`, `http://127.0.0.1:${PORT}/api/v1/projects/${projectId}/import`],
    { stdout: 'pipe', stderr: 'pipe' },
  )
  const [stdout, stderr, code] = await Promise.all([new Response(curl.stdout).text(), new Response(curl.stderr).text(), curl.exited])
  const figures = /^([\d.]+) (\d+) (\d+)$/.exec(stdout.trim())
  if (code !== 0 || !figures) throw new Error(`import: curl exited ${code}: ${stdout} ${stderr}`)
  const answer = readFileSync(out, 'utf8')
  rmSync(out, { force: true })
  return { seconds: Number(figures[1]), status: Number(figures[2]), uploaded: Number(figures[3]), answer }
}

interface Counted {
  items: number
  first: number
  last: number
  labelled: number
  assigned: number
  entries: number
  relationships: number
  counter: number
  /** Per-status differences between work_item_counts and the rows (bench/seed/growth `countDifferences`). */
  workItemCounts: string[]
  /** (work item, kind) pairs whose entry_counts differ from the entries. */
  entryCountDifferences: number
  /** Types whose relationship_counts differ from the relationships. */
  relationshipCountDifferences: number
}

/** The project's rows counted by SQL, and its maintained counts against them. */
async function countProject(url: string, org: ImportOrganization, projectId: string): Promise<Counted> {
  const [row] = await withClient(
    url,
    (client) => client`
    select (select count(*) from work_items where project_id = ${projectId})::int as items,
           (select coalesce(min(number), 0) from work_items where project_id = ${projectId})::int as first,
           (select coalesce(max(number), 0) from work_items where project_id = ${projectId})::int as last,
           (select count(*) from work_item_labels where project_id = ${projectId})::int as labelled,
           (select count(*) from work_items where project_id = ${projectId} and assignee_id is not null)::int as assigned,
           (select count(*) from entries where project_id = ${projectId})::int as entries,
           (select count(*) from relationships where project_id = ${projectId})::int as relationships,
           (select coalesce(max(last_number), 0) from work_item_counters where project_id = ${projectId})::int as counter,
           (select count(*) from (select work_item_id, kind, count(*)::int as n from entries where project_id = ${projectId} group by 1, 2) r
              full join (select c.work_item_id, c.kind, c.items from entry_counts c join work_items w on w.id = c.work_item_id and w.organization_id = c.organization_id where w.project_id = ${projectId}) c
              using (work_item_id, kind) where coalesce(r.n, 0) <> coalesce(c.items, 0))::int as differences,
           (select count(*) from (select type, count(*)::int as n from relationships where project_id = ${projectId} group by 1) r
              full join (select type, items from relationship_counts where project_id = ${projectId}) c using (type)
              where coalesce(r.n, 0) <> coalesce(c.items, 0))::int as relationship_differences`,
  )
  return {
    items: row!.items,
    first: row!.first,
    last: row!.last,
    labelled: row!.labelled,
    assigned: row!.assigned,
    entries: row!.entries,
    relationships: row!.relationships,
    counter: row!.counter,
    workItemCounts: await countDifferences(url, { ...org, projectId }),
    entryCountDifferences: row!.differences,
    relationshipCountDifferences: row!.relationship_differences,
  }
}

/** The counts are what the file holds, and the maintained counts equal the rows. */
const exact = (c: Counted, f: ImportFile) =>
  c.items === f.items && c.first === 1 && c.last === f.items && c.counter === f.items && c.labelled === f.labelled && c.assigned === f.assigned && c.entries === f.entries && c.relationships === f.relationships && c.workItemCounts.length === 0 && c.entryCountDifferences === 0 && c.relationshipCountDifferences === 0

/**
 * Every work item of the database and what hangs on them, and the maintained counts, gone
 * (TRUNCATE: empty tables and indexes), then a checkpoint: each timed import and each ceiling run
 * starts from the same state, not from a table the runs before it grew (a GIN index's inserts cost
 * more as it grows). Only the benchmark's own rows are there; the service holds no lock between
 * requests.
 */
async function resetTables(url: string): Promise<void> {
  await withClient(url, async (client) => {
    await client.unsafe('truncate work_items, work_item_counts, work_item_counters, entry_counts, relationship_counts cascade')
    await client.unsafe('checkpoint')
  })
}

/** The ceiling's steps, in order (a timestamp read between each). */
const CEILING_STEPS = ['work_items', 'work_item_labels', 'entries', 'relationships', 'counts'] as const

/**
 * psql `\copy` of the CSVs into `projectId` and the maintained counts, in one transaction: seconds,
 * in all and per step (the server's clock_timestamp() read between steps). `withoutText`: the two
 * GIN indexes of work_items' text search (the trigram index on titles, the index of the generated
 * search_vector column, which is still computed) dropped first, and everything rolled back: what
 * they cost the database.
 */
async function ceilingRun(url: string, org: ImportOrganization, projectId: string, items: number, withoutText = false): Promise<ImportCeiling> {
  const paths = await writeImportCsvs(join(TMP, `import-ceiling-${process.pid}`), items, org, projectId)
  const o = org.organizationId
  const mark = "select 'mark', extract(epoch from clock_timestamp());"
  const steps = [
    `\\copy work_items (id, organization_id, project_id, number, title, description, status, priority, assignee_id, due_date, position, created_by, created_at, updated_at) from '${paths.work_items}' csv`,
    `\\copy work_item_labels (work_item_id, label_id, organization_id, project_id) from '${paths.work_item_labels}' csv`,
    `\\copy entries (id, organization_id, project_id, work_item_id, kind, body, author_id, position, created_at, updated_at) from '${paths.entries}' csv`,
    `\\copy relationships (id, organization_id, project_id, source_work_item_id, target_work_item_id, type, created_by, created_at, updated_at) from '${paths.relationships}' csv`,
    [
      `insert into work_item_counts (project_id, status, organization_id, items) select project_id, status, organization_id, count(*) from work_items where project_id = '${projectId}' and organization_id = '${o}' group by 1, 2, 3;`,
      `insert into entry_counts (work_item_id, kind, organization_id, items) select work_item_id, kind, organization_id, count(*) from entries where project_id = '${projectId}' and organization_id = '${o}' group by 1, 2, 3;`,
      `insert into relationship_counts (project_id, type, organization_id, items) select project_id, type, organization_id, count(*) from relationships where project_id = '${projectId}' and organization_id = '${o}' group by 1, 2, 3;`,
      `insert into work_item_counters (project_id, organization_id, last_number) values ('${projectId}', '${o}', ${items}) on conflict (project_id, organization_id) do update set last_number = excluded.last_number;`,
    ].join('\n'),
  ]
  const script = [
    'begin;',
    ...(withoutText ? ['drop index work_items_title_trgm_idx, work_items_search_idx;'] : []),
    mark,
    ...steps.flatMap((step) => [step, mark]),
    withoutText ? 'rollback;' : 'commit;',
  ].join('\n')
  const scriptPath = join(TMP, `import-ceiling-${process.pid}.sql`)
  await Bun.write(scriptPath, `${script}\n`)
  try {
    const started = performance.now()
    const psql = Bun.spawn(['psql', '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', url, '-f', scriptPath], { stdout: 'pipe', stderr: 'pipe' })
    const [out, err, code] = await Promise.all([new Response(psql.stdout).text(), new Response(psql.stderr).text(), psql.exited])
    const seconds = (performance.now() - started) / 1000
    if (code !== 0) throw new Error(`import: psql \\copy exited ${code}: ${err.slice(0, 500)}`)
    const marks = [...out.matchAll(/^mark\|([\d.]+)$/gm)].map((m) => Number(m[1]))
    const stepSeconds = Object.fromEntries(CEILING_STEPS.map((step, n) => [step, (marks[n + 1] ?? NaN) - (marks[n] ?? NaN)]))
    return { projectId, seconds, itemsPerSecond: items / seconds, steps: stepSeconds, withoutText }
  } finally {
    for (const path of [...Object.values(paths), scriptPath]) rmSync(path, { force: true })
  }
}

export async function run(): Promise<void> {
  mkdirSync(TMP, { recursive: true })
  const projects = 1 + RUNS + CEILING_RUNS + 1
  const { url, seeded: org } = await seededDatabase('worktrack_bench_import', (db) => seedImportOrganization(db, projects))
  const [warmupProject, ...rest] = org.projects
  const runProjects = rest.slice(0, RUNS)
  const ceilingProjects = rest.slice(RUNS, RUNS + CEILING_RUNS)
  const withoutTextProject = rest[RUNS + CEILING_RUNS]!
  const file = join(TMP, `import-${ITEMS}.ndjson`)
  const warmupFile = join(TMP, `import-warmup-${WARMUP_ITEMS}.ndjson`)
  const generateStarted = performance.now()
  const body = await writeImportNdjson(file, ITEMS, org)
  const generateSeconds = (performance.now() - generateStarted) / 1000
  const warmupBody = await writeImportNdjson(warmupFile, WARMUP_ITEMS, org)
  console.log(`import: ${round(body.lines)} lines, ${round(body.bytes / MiB, 1)} MiB (${round(body.items)} work items, ${round(body.entries)} entries, ${round(body.relationships)} relationships) written in ${round(generateSeconds, 1)} s`)

  const runs: ImportRun[] = []
  let peakRssMiB = 0
  let hwmBeforeMiB = 0
  let idleMiB = 0
  const ceilings: ImportCeiling[] = []
  const ceilingCounts: Counted[] = []
  let withoutText: ImportCeiling | undefined
  const activities: Array<[string, Activity]> = []
  const traces: string[] = []
  try {
    if (body.bytes >= MAX_BODY) throw new Error(`import: the file is ${body.bytes} bytes, not under the import's 64 MiB`)
    const service = await startService(url, PORT)
    try {
      await Bun.sleep(1000)
      idleMiB = service.rssMiB()
      hwmBeforeMiB = service.peakRssMiB()
      const warm = await postImport(warmupBody.path, warmupProject!, org.secret)
      if (warm.status !== 200) throw new Error(`import: the warm-up import answered ${warm.status}: ${warm.answer.slice(0, 500)}`)
      const warmCounted = await countProject(url, org, warmupProject!)
      if (!exact(warmCounted, warmupBody)) throw new Error(`import: the warm-up project's counts are off: ${JSON.stringify(warmCounted)}`)
      await resetTables(url)
      console.log(`import: warm-up of ${WARMUP_ITEMS} work items in ${round(warm.seconds, 2)} s`)
      for (const [n, projectId] of runProjects.entries()) {
        if (n > 0) await resetTables(url)
        const load = await quiet(`run ${n + 1}`)
        await Bun.sleep(1000)
        const rssBefore = service.rssMiB()
        const sampler = activitySampler(url, STATEMENTS)
        const meter = cpuMeter(service.pid)
        const stopRss = rssSampler(service, SAMPLE_MS)
        const posting = postImport(file, projectId!, org.secret)
        const wrote = firstWrite(url, posting)
        const posted = await posting
        const samples = stopRss()
        const cpu: CpuShare = meter()
        const activity = await sampler()
        const firstWriteSeconds = await wrote
        const hwmMiB = service.peakRssMiB()
        const afterMiB = service.rssMiB()
        let imported: Record<string, number> = {}
        let notes: string[] = []
        try {
          const data = (JSON.parse(posted.answer) as { data: { imported: Record<string, number>; notes: string[] } }).data
          imported = data?.imported ?? {}
          notes = data?.notes ?? []
        } catch {
          // not JSON: the status says
        }
        const counted = await countProject(url, org, projectId!)
        const countsExact = exact(counted, body)
        const peak = Math.max(...samples.map(([, mib]) => mib))
        runs.push({
          status: posted.status,
          seconds: posted.seconds,
          uploaded: posted.uploaded,
          itemsPerSecond: ITEMS / posted.seconds,
          linesPerSecond: body.lines / posted.seconds,
          firstWriteSeconds,
          imported,
          notes: notes.length,
          counts: { ...counted, exact: countsExact },
          rss: { beforeMiB: rssBefore, peakMiB: peak, afterMiB, hwmMiB, slopeMiBPerSecond: fitSlope(samples).slope, samples: samples.length },
          cpu,
          activity,
          load,
        })
        activities.push([`run ${n + 1}`, activity])
        traces.push(perSecond(samples))
        console.log(
          `import: run ${n + 1}: status ${posted.status} in ${round(posted.seconds, 2)} s = ${round(ITEMS / posted.seconds)} work items/s (${round(body.lines / posted.seconds)} lines/s; first insert seen at ${firstWriteSeconds === null ? '—' : `${round(firstWriteSeconds, 2)} s`}); VmRSS ${round(rssBefore, 1)} → peak ${round(peak, 1)} → ${round(afterMiB, 1)} MiB, VmHWM ${round(hwmMiB, 1)}; cores service ${round(cpu.service, 2)} / postgres ${round(cpu.postgres, 2)}; counts ${countsExact ? 'exact' : `OFF ${JSON.stringify(counted)}`}${posted.status === 200 ? '' : `; ${posted.answer.slice(0, 300)}`}`,
        )
      }
      peakRssMiB = service.peakRssMiB()
    } finally {
      await service.stop()
    }

    // The database's part alone, the service stopped: the same values by psql's \copy, one transaction.
    for (const projectId of ceilingProjects) {
      await resetTables(url)
      await quiet('the ceiling')
      const ceiling = await ceilingRun(url, org, projectId!, ITEMS)
      ceilings.push(ceiling)
      ceilingCounts.push(await countProject(url, org, projectId!))
      console.log(`import: psql \\copy ceiling: ${round(ceiling.seconds, 2)} s = ${round(ceiling.itemsPerSecond)} work items/s (${Object.entries(ceiling.steps).map(([step, sec]) => `${step} ${round(sec, 2)} s`).join(', ')})`)
    }
    await resetTables(url)
    await quiet('the ceiling without text search')
    withoutText = await ceilingRun(url, org, withoutTextProject, ITEMS, true)
    console.log(`import: psql \\copy without the two text-search GIN indexes (rolled back): ${round(withoutText.seconds, 2)} s = ${round(withoutText.itemsPerSecond)} work items/s (${Object.entries(withoutText.steps).map(([step, sec]) => `${step} ${round(sec, 2)} s`).join(', ')})`)
  } finally {
    await dropDatabase(url)
    rmSync(warmupFile, { force: true })
    rmSync(file, { force: true })
  }

  const bySpeed = [...runs].sort((a, b) => b.itemsPerSecond - a.itemsPerSecond)
  const best = bySpeed[0]!
  const median = bySpeed[Math.floor(bySpeed.length / 2)]!
  const ceiling = ceilings.reduce((a, b) => (b.itemsPerSecond > a.itemsPerSecond ? b : a))
  const ceilingExact = ceilingCounts.every((c) => exact(c, body))
  const complete = runs.every((r) => r.status === 200 && r.counts.exact)
  const judged = ITEMS >= 100_000
  const met = complete && median.itemsPerSecond >= LIMITS.importItemsPerSecond
  const commit = serviceCommit()
  const mib = (value: number) => round(value, 1)
  const s = (value: number) => round(value, 2)
  const cores = (c: CpuShare) => `${s(c.service)} / ${s(c.postgres)} / ${s(c.other + c.bench)} / ${s(c.busy)}`
  const column = (f: (r: ImportRun) => string) => runs.map(f).join(' | ')
  const steps = (c: ImportCeiling) => CEILING_STEPS.map((step) => `${step === 'counts' ? 'the maintained counts' : `\`${step}\``} ${s(c.steps[step] ?? NaN)} s`).join(', ')
  const hwmPeak = Math.max(peakRssMiB, ...runs.map((r) => r.rss.peakMiB))

  writeSection(
    name,
    `## Project import (NDJSON, one transaction, ${round(ITEMS)} work items)

${sectionHead(`\`npm run bench -- import\` (BENCH_IMPORT_ITEMS=${ITEMS}; service on the PostgreSQL server)`, ' — **2 cores, shared**')}
- The service (entries/bun.ts, default configuration, engine heap sized as for 512 MiB, commit ${commit}) on a fresh database: one organization, its owner's API key (${IMPORT_SCOPES.map((scope) => `\`${scope}\``).join(', ')}), ${IMPORT_LABELS.length} labels of the organization, ${projects} empty projects the owner owns (bench/seed/import.ts).
- The file (bench/tmp/, written in ${round(generateSeconds, 1)} s by bench/seed/import.ts, in the export's shape: a \`project\` line, ${IMPORT_LABELS.length} \`label\` lines, the owner's \`member\` line, then): **${round(body.items)} work items** (titles of 80 characters, one in seven with quotes and accented letters; descriptions of 90 with a line break — the export's ids, key, times and names take some 400 bytes of each line, and 100,000 must fit 64 MiB; statuses in turn, priorities 0–4, numbers 1..N and positions; one in five assigned to the owner by id, one in three with a due date, one in ten with a label by \`{id, name, color}\`), **${round(body.entries)} entries** (one on every tenth work item), **${round(body.relationships)} relationships** (the four types in turn): ${round(body.lines)} lines, **${round(body.bytes)} bytes** (${mib(body.bytes / MiB)} MiB of the 64 MiB allowed, ${round(body.bytes / body.lines)} per line).
- One untimed warm-up import of ${round(WARMUP_ITEMS)} work items (same shape), then the file POSTed by \`curl --data-binary @file\` (\`Content-Type: application/x-ndjson\`) into a new empty project, ${RUNS} times, each from the same state — every work item of the database and the maintained counts truncated after the run before (and its counts checked), then a checkpoint — and after the machine's 1-minute load was at most ${LOAD_LIMIT} (polled). Seconds: curl's \`time_total\` (the upload, the body read and parsed, the transaction, the answer). The service's VmRSS every ${SAMPLE_MS} ms, VmHWM after; CPU in cores (/proc); pg_stat_activity every 50 ms; "first insert seen": when a session of the service was first seen inserting or idle in the import's transaction (before it, the service reads and parses the body). After each, the project counted by SQL: work items (numbers 1..N, the counter at N), labels on them, assignees, entries, relationships, and the maintained counts (\`work_item_counts\` per status, \`entry_counts\` per work item and kind, \`relationship_counts\` per type) against the rows.
- **Database ceiling** (reported, not judged), the service stopped: psql \`\\copy\` of CSVs of the same values (new ids) into another empty project — \`work_items\`, \`work_item_labels\`, \`entries\`, \`relationships\` — and the maintained counts by \`insert … select … group by\`, in one transaction, from the same state as each import (tables truncated, a checkpoint); no JSON, no remapping, no HTTP. ${CEILING_RUNS} runs (a project each); the better one. Its projects' counts: ${ceilingExact ? 'exact' : '**off**'}.
- ${target.throughput}

| | ${runs.map((_, n) => `run ${n + 1}`).join(' | ')} |
|---|${runs.map(() => '---:').join('|')}|
| status | ${column((r) => String(r.status))} |
| seconds (curl \`time_total\`) | ${column((r) => `**${s(r.seconds)}**`)} |
| work items/s | ${column((r) => `**${round(r.itemsPerSecond)}**`)} |
| lines/s (every line of the file) | ${column((r) => round(r.linesPerSecond))} |
| MiB/s uploaded | ${column((r) => mib(r.uploaded / MiB / r.seconds))} |
| first insert seen at | ${column((r) => (r.firstWriteSeconds === null ? '—' : `${s(r.firstWriteSeconds)} s`))} |
| imported (the answer) | ${column((r) => Object.entries(r.imported).map(([type, count]) => `${type} ${round(count)}`).join(', '))} |
| notes in the answer | ${column((r) => String(r.notes))} |
| counted: work items (numbers, counter) | ${column((r) => `${round(r.counts.items)} (${r.counts.first}..${round(r.counts.last)}, ${round(r.counts.counter)})`)} |
| counted: labelled / assigned / entries / relationships | ${column((r) => `${round(r.counts.labelled)} / ${round(r.counts.assigned)} / ${round(r.counts.entries)} / ${round(r.counts.relationships)}`)} |
| maintained counts equal the rows | ${column((r) => (r.counts.workItemCounts.length === 0 && r.counts.entryCountDifferences === 0 && r.counts.relationshipCountDifferences === 0 ? 'yes' : `**no** (${[...r.counts.workItemCounts, `${r.counts.entryCountDifferences} entry counts`, `${r.counts.relationshipCountDifferences} relationship counts`].join('; ')})`))} |
| every count as expected | ${column((r) => (r.counts.exact ? 'yes' : '**no**'))} |
| service VmRSS before / peak during / right after (MiB) | ${column((r) => `${mib(r.rss.beforeMiB)} / **${mib(r.rss.peakMiB)}** / ${mib(r.rss.afterMiB)}`)} |
| service VmHWM right after (MiB) | ${column((r) => mib(r.rss.hwmMiB))} |
| cores: service / PostgreSQL / the rest (curl, the samplers, anything else) / machine | ${column((r) => cores(r.cpu))} |
| machine load (1 min) at the start | ${column((r) => String(r.load))} |

**Best ${round(best.itemsPerSecond)} work items/s (${s(best.seconds)} s), median ${round(median.itemsPerSecond)} (${s(median.seconds)} s)**, ${round(median.linesPerSecond)} lines/s at the median; target ≥ ${LIMITS.importItemsPerSecond.toLocaleString('en-US')} work items/s judged on the median${judged ? `: ${met ? 'met' : '**missed**'}` : ': not judged, fewer than 100k work items'}. The service idle before the warm-up: VmRSS ${mib(idleMiB)} MiB, VmHWM ${mib(hwmBeforeMiB)} MiB; its VmHWM over the whole run: **${mib(peakRssMiB)} MiB** (it holds the body and its parsed lines while it writes).

Service VmRSS during each import, the highest sample of each second (MiB):
${traces.map((trace, n) => `- run ${n + 1}: ${trace}`).join('\n')}

psql \`\\copy\` of the same rows: ${ceilings.map((c) => `${s(c.seconds)} s`).join(', ')} = **${round(ceiling.itemsPerSecond)} work items/s**; the import's median reaches **${round(median.itemsPerSecond / ceiling.itemsPerSecond, 2)}×** that (best ${round(best.itemsPerSecond / ceiling.itemsPerSecond, 2)}×). Where the database's time went (the better run, the server's clock between steps): ${steps(ceiling)}. The same \`\\copy\` with work_items' two text-search GIN indexes dropped inside the transaction (the trigram index on titles and the index of \`search_vector\`, whose generated column is still computed; then everything rolled back): ${s(withoutText!.seconds)} s = **${round(withoutText!.itemsPerSecond)} work items/s** (${steps(withoutText!)}): what keeping titles and descriptions searchable costs every writer of work items, the import included.

What the database sessions were doing during each import (pg_stat_activity every 50 ms; share of the busy-session samples, top wait; "idle in transaction" is the import's session waiting while the service builds the next statement):

${activityTable(activities)}`,
  )
  recordResult(name, {
    items: ITEMS,
    entries: body.entries,
    relationships: body.relationships,
    lines: body.lines,
    bytes: body.bytes,
    generateSeconds,
    runs,
    best: { seconds: best.seconds, itemsPerSecond: best.itemsPerSecond, linesPerSecond: best.linesPerSecond },
    median: { seconds: median.seconds, itemsPerSecond: median.itemsPerSecond, linesPerSecond: median.linesPerSecond },
    complete,
    ceiling: { ...ceiling, runs: ceilings.map((c) => c.seconds), exact: ceilingExact },
    withoutText: withoutText!,
    ratio: median.itemsPerSecond / ceiling.itemsPerSecond,
    idleMiB,
    peakRssMiB: hwmPeak,
  })
  console.log(
    `import: best ${round(best.itemsPerSecond)} / median ${round(median.itemsPerSecond)} work items/s (target ≥ ${LIMITS.importItemsPerSecond}: ${met}); psql \\copy ${round(ceiling.itemsPerSecond)} items/s, ratio ${round(median.itemsPerSecond / ceiling.itemsPerSecond, 2)}; VmHWM ${mib(peakRssMiB)} MiB; counts ${complete ? 'exact' : 'OFF'}`,
  )
  if (!complete) throw new Error(`import: an import failed or its counts are off (recorded): ${runs.map((r) => `${r.status} ${r.counts.exact}`).join(', ')}`)
}
