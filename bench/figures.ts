/**
 * What each benchmark records in bench/results.json, in the units its section shows (req/s, TPS,
 * ms, MiB, messages/s): the summary (bench/summary.ts) is generated from these figures.
 */
import type { MultiShardStatement, PhaseCounts, ShardCounts } from './lib/citus'
import type { CpuShare } from './lib/cpu'
import type { Activity } from './lib/pg-activity'
import type { Latency } from './lib/stats'
import type { Throughput } from './lib/wrk'

/** One shape of the display benchmark: the endpoint, its pgbench ceiling, stale answers and calls per commit. */
export interface DisplayShape extends Throughput {
  pgbench: number
  /** 409 answers: an update a later call overtook. */
  stale: number
  /** Display calls counted per database commit over the service's life. */
  callsPerCommit: number
}

/** One page of the pages benchmark: its best run, mean latency (ms), HTML size (bytes) and components. */
export interface PageShape extends Throughput {
  meanMs: number
  bytes: number
  components: number
}

export interface SearchSize {
  label: string
  rows: number
  one: Throughput
  eight: Throughput
}

export interface WebhooksPaced {
  offeredPerSecond: number
  changesPerSecond: number
  /** Events that arrived while the changes were being made, per second of it. */
  deliveredPerSecond: number
  changes: number
  failed: number
  /** Latency from the PATCH's 2xx answer at the client to the event's arrival, ms. */
  p50: number
  p99: number
  max: number
  /** The same from the event's occurredAt (the transaction's start, ms precision). */
  occurredP50: number
  occurredP99: number
  /** Pending deliveries when the last change was answered. */
  backlogAtEnd: number
  drainSeconds: number
  /** Changes whose event never arrived (after the drain). */
  missing: number
  duplicates: number
}

export interface WebhooksSaturation {
  changesPerSecond: number
  /** Arrivals during the wrk run, per second. */
  deliveredPerSecond: number
  /** The best whole second of arrivals during the run and the drain. */
  bestSecond: number
  /** Arrivals during the drain (no API load), per second. */
  drainPerSecond: number
  backlogAtEnd: number
  drainSeconds: number
  leftAfterDrain: number
  duplicates: number
}

export interface WebhooksWrites {
  none: Throughput
  five: Throughput
  /** req/s(5 webhooks) / req/s(none). */
  ratio: number
  /** Events that reached the 5 receivers during the measured runs with webhooks, and per second. */
  delivered: number
  deliveredPerSecond: number
  /** Deliveries queued by the measured runs (5 per change) and pending at the end of the last. */
  queued: number
  backlogAtEnd: number
  duplicates: number
  /** The same webhooks with the delivery workers off (`webhooks.workers: false`): the events recorded, none sent. */
  recordingOnly: Throughput
  /** That service with the webhooks disabled, in turn with recordingOnly's runs: the recording's own "none". */
  recordingNone: Throughput
  peakRssMiB: number
}

/** One side of one Citus shape. */
export interface CitusSide extends Throughput {
  /** Socket errors and answers ≥ 400 (display: 409 stale updates apart). */
  errors: number
  /** Answers by status. */
  statuses: Record<string, number>
}

export type CitusShapeName = 'display' | 'users-me' | 'list-repeated' | 'list-cold' | 'search'

export interface CitusShape {
  name: CitusShapeName
  label: string
  /** The better of two runs on each side (errors: both runs'). */
  single: CitusSide
  cluster: CitusSide
  /** req/s of each run, in order. */
  runs: Record<'single' | 'cluster', number[]>
  /** cluster req/s ÷ single req/s. */
  ratio: number
  /** cluster p99 ÷ single p99 (latency: above 1 is slower). */
  p99Ratio: number
  /** Citus executions during the cluster's two measured runs, and during its warm-up (the shape's first requests). */
  measured: PhaseCounts
  warmup: PhaseCounts
  /** Citus executions per request in the cluster's measured runs (background work included). */
  executionsPerRequest: number
}

export interface CitusFigures {
  shapes: CitusShape[]
  /** The measured runs' executions, all shapes. */
  hotPaths: PhaseCounts
  /** Executions over the cluster services' whole lives (start-up, runs, idle moments, stop). */
  wholeRun: ShardCounts
  /** Each multi-task statement the coordinator logged, by phase (null: the log was not readable). */
  multiShard: MultiShardStatement[] | null
  workers: number
  citusVersion: string
  /** The commit the services ran (and whether src/plugins had uncommitted changes). */
  commit: string
  /** The machine's 1-minute load average at the start of each shape (other sessions' work included). */
  loads: number[]
  peakRssMiB: number
}

/** Cold list shapes of the growth benchmark: page 0, the middle and last pages by cursor, two filters. */
export type GrowthShapeName = 'page0' | 'middleCursor' | 'lastCursor' | 'status' | 'assignee'

/** One shape's EXPLAIN ANALYZE: execution time, whether the plan cache chose its generic plan, the plan. */
export interface Explained {
  ms: number
  generic: boolean
  /** The plan's nodes, outermost first, without their figures. */
  nodes: string
  /** The whole EXPLAIN (ANALYZE, BUFFERS) text. */
  plan: string
  /** The statement as the service sends it. */
  statement: string
}

export interface GrowthReadSize {
  label: string
  rows: number
  seedSeconds: number
  /** Cold reads by shape (`page`: the page the rows are at). */
  cold: Partial<Record<GrowthShapeName, Latency & { page: number }>>
  /** `page=5000` answered 400 naming `page` (offset past the bound), timed like the cold reads. */
  refused?: Latency & { page: number }
  /** The untimed walk by `meta.nextCursor` from page 0 to the last page's cursor: pages read, seconds. */
  walk?: { pages: number; seconds: number }
  /** Page 0 read again with no write between (a list-cache hit). */
  cached: Latency
  /** EXPLAIN ANALYZE of the service's statement of each shape. */
  sql: Partial<Record<GrowthShapeName, Explained>>
  /** 1-minute load average before and after this size's measurements (the machine is shared). */
  load: [number, number]
  peakRssMiB: number
}

/** PATCH throughput of one shape: the mean of its runs, and each run. */
export interface PatchFigure extends Throughput {
  runs: Throughput[]
}

export interface GrowthWriteSize {
  label: string
  rows: number
  /** Renames and status changes (they move the maintained counts), in turn, twice each. */
  patch: { title: PatchFigure; status: PatchFigure; statusOverTitle: number }
  /** The maintained counts equal the rows, per status, after every write of this size. */
  countsExact: boolean
  peakRssMiB: number
}

export interface AnswerShape extends Throughput {
  bytes: number
  body: 'string' | 'stream'
  userMicros: number
  kernelMicros: number
}

export interface DriverShape {
  label: string
  queriesPerSecond: number
  /** The benchmark process's CPU per query, µs (user + system). */
  clientMicros: number
}

export interface FieldShape {
  name: string
  totalItems: number
  p50: number
  p99: number
}

/** One credential's figures in the oauth benchmark: its best run and the median CPU per answer (µs) of the service and of PostgreSQL. */
export interface OAuthShape extends Throughput {
  serviceMicros: number
  postgresMicros: number
}

/** Sequential latency of one request shape of the bulk benchmark, in ms (nearest-rank percentiles). */
export interface BulkLatency {
  p50: number
  p90: number
  max: number
  samples: number
}

/** One wrk run of bulk creates (100 plain items a request) into one project. */
export interface BulkLoad extends Throughput {
  clients: number
  /** The run's length as wrk measured it. */
  seconds: number
  /** Answers received, and by status. */
  requests: number
  statuses: Record<string, number>
  /** Work items created per second by the 200 answers (100 each). */
  itemsPerSecond: number
  /** Answers of 500 or more; answers other than 200; socket errors (timeouts included). */
  serverErrors: number
  non200: number
  socketErrors: number
}

/** The service's resident set during one phase of the export benchmark, in MiB (VmRSS every 100 ms). */
export interface RssTrace {
  /** Before the phase began, its highest sample, and its last. */
  firstMiB: number
  peakMiB: number
  lastMiB: number
  /** Least-squares slope of the samples, MiB per second. */
  slopeMiBPerSecond: number
  samples: number
}

/** One timed read of the export's work items by psql (`\copy (…) to '/dev/null'`): the database's part alone. */
export interface ExportCeiling {
  rows: number
  seconds: number
  itemsPerSecond: number
}

/** One timed import (curl POSTing the NDJSON into an empty project) and the project counted afterwards. */
export interface ImportRun {
  status: number
  /** curl's time_total. */
  seconds: number
  /** Bytes curl uploaded. */
  uploaded: number
  itemsPerSecond: number
  linesPerSecond: number
  /** Seconds from the request until a session of the service was first seen inserting (or idle in the import's transaction); null: never seen. */
  firstWriteSeconds: number | null
  /** The answer's `imported`, by line type, and how many notes it gave. */
  imported: Record<string, number>
  notes: number
  /** The project's rows by SQL, the maintained counts' differences from them, and whether all is as the file says. */
  counts: { items: number; first: number; last: number; labelled: number; assigned: number; entries: number; relationships: number; counter: number; workItemCounts: string[]; entryCountDifferences: number; relationshipCountDifferences: number; exact: boolean }
  /** The service's VmRSS before, at most during (every 100 ms) and right after; VmHWM right after. */
  rss: { beforeMiB: number; peakMiB: number; afterMiB: number; hwmMiB: number; slopeMiBPerSecond: number; samples: number }
  cpu: CpuShare
  activity: Activity
  /** The machine's 1-minute load average when it started. */
  load: number
}

/** psql `\copy` of the import's values (CSV) and the maintained counts into an empty project, one transaction: the database's part alone. */
export interface ImportCeiling {
  projectId: string
  seconds: number
  itemsPerSecond: number
  /** Seconds of each step by the server's clock: work_items, work_item_labels, entries, relationships, counts. */
  steps: Record<string, number>
  /** Run with work_items' two text-search GIN indexes (title trigrams, search_vector) dropped, then rolled back. */
  withoutText: boolean
}

/** Every benchmark's recorded figures, by name. */
export interface Figures {
  'auth-me': { endpoint: Throughput; hello: Throughput; peakRssMiB: number; helloPeakRssMiB: number; errors: number }
  oauth: {
    /** Best run of each credential, and the median CPU µs per answer of the service and of PostgreSQL over its runs, with the credential cache on (the default). */
    me: { key: OAuthShape; token: OAuthShape }
    list: { key: OAuthShape; token: OAuthShape }
    /** `users/me` with the cache off (`auth.keyCacheTtlSeconds: 0`), and the statements reading each credential's table per request. */
    cold: { key: OAuthShape; token: OAuthShape; keyReadsPerRequest: number; tokenReadsPerRequest: number }
    /** The list's `size`. */
    listSize: number
    peakRssMiB: number
  }
  members: { endpoint: Throughput; peakRssMiB: number; pgbench64: number; pgbench10: number; errors: number }
  'work-items': {
    /** The list with its cache: 9 in 10 requests read the page, 1 in 10 changes a work item of it. */
    listRepeated: Throughput
    /** The list with its cache off: every read reads and encodes the rows. */
    listCold: Throughput
    /** Reads only with the cache on (for comparison). */
    listHot: Throughput
    /** The repeated and cold shapes with the pages' JSON written by the service (`server.listPagesBuiltBy: service`), in the same run; the other figures are the database's (the default). */
    listByService?: { repeated: Throughput; cold: Throughput }
    /** pgbench running the access check and the page's JSON statement (the ceiling judged on runs the rows statement: pgbench10, pgbench64). */
    pgbenchJson?: { pgbench10: number; pgbench64: number }
    /** The highest of the benchmark's service processes (list and search). */
    peakRssMiB: number
    pgbench10: number
    pgbench64: number
    /** Search latency by corpus (bench/seed/corpus.ts), the smaller size first; the target is judged on the realistic one. */
    search: Record<'realistic' | 'synthetic', SearchSize[]>
  }
  mcp: { rest: Throughput; mcp: Throughput; peakRssMiB: number; errors: number }
  display: { spread: DisplayShape; single: DisplayShape; peakRssMiB: number; errors: number }
  /** Requests per second of the alternating runs; ratio: mean with rules over mean without. */
  alerts: { without: number[]; withRules: number[]; rules: number; ratio: number; errors: number; peakRssMiB: number }
  pages: {
    one: PageShape
    twenty: PageShape
    /** Time of the 20-component page over that of the 1-component one by req/s: rps(1) / rps(20). */
    ratio: number
    /** p50(20) / p50(1). */
    p50Ratio: number
    /** The service's fragment renders before and after the measured runs (equal: every page came from the cache). */
    rendersBefore: number
    rendersAfter: number
    /** Requests of the measured runs. */
    requests: number
    peakRssMiB: number
    /** Socket errors and non-200 answers. */
    errors: number
  }
  push: { devices: number; perRun: number[]; median: number; best: number; exactlyOnce: boolean; peakRssMiB: number | null }
  notifications: {
    watchers: number
    /** Each change's thread updates per second, from the writer's answer to the last thread written. */
    perRun: number[]
    median: number
    /** Every watcher's thread updated exactly once per change. */
    exactlyOnce: boolean
    /** Entry POSTs with the fan-out workers off (recording only): on the watched project, on an unwatched one. */
    watched: Throughput
    unwatched: Throughput
    ratio: number
    peakRssMiB: number
  }
  'work-push': {
    /** Assignees (one device each), assignments a second, seconds of assignments, assignments made. */
    users: number
    rate: number
    seconds: number
    assignments: number
    /** Assignments per second actually sent. */
    offeredPerSecond: number
    /** Push latency (ms) from the work item's new `updatedAt` (its transaction's start, before the commit): an upper bound of commit → FCM, judged. */
    fromStart: { p50: number; p90: number; p99: number; max: number }
    /** The same from the PATCH's answer at the client (after the commit): a lower bound. */
    fromAnswer: { p50: number; p90: number; p99: number; max: number }
    /** Answered assignments whose push never reached the fake FCM; assignments not answered 200; work pushes sent more than once. */
    missing: number
    failed: number
    duplicates: number
    /** The PATCH's own latency at the client under the load, ms. */
    patch: Latency
    /** The wrk background mix (list reads and comments that notify nobody) during the assignments. */
    background: Throughput & { requests: number; serverErrors: number; socketErrors: number; statuses: Record<string, number> }
    peakRssMiB: number
  }
  'webhooks-delivery': {
    /** Changes per second offered in the paced run. */
    rate: number
    paced: WebhooksPaced
    saturation: WebhooksSaturation
    /** A second paced run at a rate the service carries (half its saturated commit rate). */
    steady: WebhooksPaced & { rate: number }
    peakRssMiB: number
  }
  'webhooks-writes': WebhooksWrites
  'sign-in': {
    idleRssMiB: number
    /** `GET /users/me` alone, then during each storm. */
    quiet: Throughput
    storms: Array<{ concurrency: number; usersMe: Throughput; peakRssMiB: number; answers: Record<string, number>; missingRetryAfter: number; hashedPerSecond: number }>
  }
  mixed: {
    minutes: number
    samples: number
    requestsPerSecond: number
    worstP99: number
    firstRssMiB: number
    lastRssMiB: number
    peakRssMiB: number
    /** Least-squares slope of RSS over the second half of the samples, MiB per minute. */
    slopeMiBPerMinute: number
    /** Its standard error (null with fewer than 3 samples in the second half). */
    slopeStandardError: number | null
    /** Mean RSS of the last quarter of the samples over that of the first quarter. */
    quarterRatio: number
    /** null: the run was too short to judge. */
    growthTrend: boolean | null
    errors: number
    serverErrors: number
  }
  citus: CitusFigures
  'growth-reads': { samples: number; sizes: GrowthReadSize[]; peakRssMiB: number }
  'growth-writes': { sizes: GrowthWriteSize[]; peakRssMiB: number }
  answers: { shapes: AnswerShape[] }
  driver: { pgbench32: number; pgbench10: number; shapes: DriverShape[] }
  fields: { rows: number; samples: number; shapes: FieldShape[]; bulkMs: number; singleMs: number }
  bulk: {
    /** Sequential, one client, after a warm-up: one `POST …/work-items` of one plain item, one `POST …/bulk` of 100, one `PATCH …/bulk` of 100 status changes. */
    single: BulkLatency
    create: BulkLatency
    patch: BulkLatency
    /** create p50 ÷ single p50. */
    ratio: number
    /** 4 clients into one project. */
    throughput: BulkLoad
    /** 8 clients into one project, then its rows checked: numbers 1..N without a gap, the maintained counts equal to the rows. */
    robustness: BulkLoad & { rows: number; numbersGapless: boolean; countsExact: boolean }
    /** pgbench, same clients as `throughput`, of the database's part alone (the number reservation, the 100-row insert, the count move), items/s. */
    pgbenchItemsPerSecond: number
    peakRssMiB: number
  }
  export: {
    /** Work items in the exported project (BENCH_EXPORT_ITEMS), and its work_item_labels rows. */
    items: number
    labelled: number
    /** Seconds to seed the project (inserts, text indexes, vacuum). */
    seedSeconds: number
    /** The export read as fast as curl can: status, bytes, work-item lines counted, curl's exit code; seconds to the first byte and to the last (curl's time_total). */
    status: number
    bytes: number
    lines: number
    curlExit: number
    firstByteSeconds: number
    seconds: number
    itemsPerSecond: number
    mibPerSecond: number
    /** Every work item in it, the stream ended properly (status 200, curl exit 0). */
    complete: boolean
    /** VmRSS: before the export (the service started, idle), during it (every 100 ms), right after it and 5 s later; VmHWM before and right after it. */
    rss: RssTrace & { afterMiB: number; settledMiB: number; hwmBeforeMiB: number; hwmMiB: number }
    /** Cores in use during the export (/proc). */
    cpu: CpuShare
    /** Where the database sessions were during the export (pg_stat_activity every 50 ms). */
    activity: Activity
    /** psql reading the same rows with the export's work-item statement (no pages), twice; the better run. */
    ceiling: ExportCeiling & { runs: number[] }
    /** Export items/s ÷ the ceiling's. */
    ratio: number
    /** The statement the ceiling runs (built from the plugins' code) began as the service's, as pg_stat_activity showed it during the export (null: not seen). */
    statementMatches: boolean | null
    /** A client reading at `rate` (curl --limit-rate) for `seconds`, then killed: the RSS meanwhile, what it got, and how long until the export's snapshot was given back (null: not within 45 s). */
    slowReader: RssTrace & { rate: string; seconds: number; bytes: number; releaseSeconds: number | null }
    /** VmHWM over the service's whole life (the slow reader included). */
    peakRssMiB: number
  }
  import: {
    /** Work items in the file (BENCH_IMPORT_ITEMS), its entries, relationships, lines and bytes; seconds to write it. */
    items: number
    entries: number
    relationships: number
    lines: number
    bytes: number
    generateSeconds: number
    /** The timed imports, each into a new empty project. */
    runs: ImportRun[]
    best: { seconds: number; itemsPerSecond: number; linesPerSecond: number }
    median: { seconds: number; itemsPerSecond: number; linesPerSecond: number }
    /** Every import answered 200 and every count was as expected. */
    complete: boolean
    /** psql `\copy` of the same values, twice; the better run (and whether its projects' counts were exact). */
    ceiling: ImportCeiling & { runs: number[]; exact: boolean }
    /** psql `\copy` of the same values with work_items' two text-search GIN indexes dropped inside the transaction, rolled back: what it costs. */
    withoutText: ImportCeiling
    /** The median import's work items/s ÷ the ceiling's. */
    ratio: number
    /** The service's VmRSS idle before the warm-up. */
    idleMiB: number
    /** The service's VmHWM over the run (and the highest VmRSS sample). */
    peakRssMiB: number
  }
  'work-sources': {
    rows: number
    smallRows: number
    samples: number
    /** Each measure bound alone, on each project (ms). */
    alone: Array<{ rows: number; label: string; buildMs: number; transaction: WorkSourceSpread; fromAnswer: WorkSourceSpread; scanMs: number; unbindMs: number }>
    burst: {
      writes: number
      rate: number
      writeSeconds: number
      /** The same kind of writes just before, with no source bound. */
      unboundSeconds: number
      statuses: Record<string, number>
      buildMs: number
      /** The 20 sources unbound one after another (ms). */
      unbindAllMs: number
      /** From the last answer to the last recomputation seen (ms). */
      settleMs: number
      perComponent: Array<{ label: string; total: number; mostInASecond: number }>
      mostInASecond: number
      mismatches: Array<{ label: string; expected: string; shown: string }>
    }
    peakRssMiB: number
  }
}

export interface WorkSourceSpread {
  p50: number
  p95: number
  max: number
}
