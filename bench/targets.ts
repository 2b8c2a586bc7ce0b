/**
 * What the benchmarks promise, one sentence per judged figure, in one place. Each scenario exports
 * its own (`target`, bench/scenarios/); the summary at the top of bench/RESULTS.md shows the
 * sentence beside the figure and judges the figure by the numbers the sentence states (LIMITS,
 * written into the sentences, so the two cannot part). The order here is the order of the summary
 * and of `npm run bench`.
 */

export const LIMITS = {
  /** `GET /users/me` req/s ÷ hello-world req/s. */
  bearerShareOfHello: 0.5,
  /** OAuth access token req/s ÷ API key req/s, same user, scopes and request, the credential cache on. */
  oauthTokenShareOfKey: 0.9,
  /** Endpoint req/s ÷ pgbench TPS of the same statements. */
  membersOfPgbench: 0.7,
  // Issue 44: the project's repeated shape (1 in 10 a PATCH) at 0.6x the rows statement's ceiling.
  listRepeatedOfPgbench: 0.6,
  listColdOfPgbench: 0.4,
  displaySpreadOfPgbench: 1.5,
  displaySingleOfPgbench: 2,
  /** pgbench clients of the spread shape's ceiling (2 threads, one script per account). */
  displaySpreadPgbenchClients: 32,
  /** ms, at 64 connections. */
  displayP99Ms: 50,
  /** ms, 1 client, at a million rows. */
  searchP99Ms: 50,
  searchGrowth: 3,
  mcpShareOfRest: 0.5,
  alertsShareOfWithout: 0.9,
  /** rps(1 component) ÷ rps(20 components). */
  pagesTimeRatio: 2,
  pushMessagesPerSecond: 2000,
  /** Thread updates per second from one change to a project 10,000 users watch. */
  notificationThreadsPerSecond: 5000,
  /** Entry POST req/s with 10,000 watchers ÷ without (recording only): at most 10 % slower. */
  notificationsWriterShare: 1 / 1.1,
  /** ms from an assignment's commit to its push at the (fake) FCM, p99, under the mixed load. */
  workPushP99Ms: 5000,
  webhooksEventsPerSecond: 1000,
  /** Of the offered rate committed, and of the committed delivered in the same window. */
  webhooksKeptUpShare: 0.95,
  webhooksWritesShareOfNone: 0.8,
  signInGrowthMiB: 300,
  signInUsersMeP99Ms: 50,
  mixedSlopeMiBPerMinute: 1,
  mixedQuarterRatio: 1.2,
  mixedMinimumMinutes: 10,
  /** Cold list reads at a million rows, ms. */
  coldPageP50Ms: 15,
  coldPageP99Ms: 40,
  coldPageGrowth: 1.5,
  filteredPageP50Ms: 20,
  statusOverRename: 0.9,
  /** ms, the recompute transaction of one bound component at a million work items, p95 of every measure. */
  workSourceRecomputeMs: 50,
  /** Recomputations of one component in any second of a burst of writes. */
  workSourceRecomputationsPerSecond: 5,
  /** Bulk creates: the median of one `POST …/work-items/bulk` of 100 plain items, ms, one client; and it over a single `POST …/work-items`'s median. */
  bulkCreateP50Ms: 25,
  bulkOverSingle: 3,
  /** Work items created per second by 4 clients sending bulk creates of 100 into one project. */
  bulkItemsPerSecond: 5000,
  /** The service's peak RSS (VmHWM), MiB, exporting a project of a million work items read as fast as the client can. */
  exportPeakRssMiB: 250,
  /** MiB the service's RSS may grow while a client reads an export at 200 KB/s for 10 s, by the least-squares trend of its samples (the stream queues about 1 MiB; the engine's collections make a sawtooth around the trend). */
  exportSlowReaderGrowthMiB: 16,
  /** Work items per second a project's import (NDJSON as the export writes it, with entries and relationships) writes, the median of 3 imports of 100,000. */
  importItemsPerSecond: 10_000,
  peakRssMiB: 200,
} as const

const L = LIMITS
const share = (value: number) => `${Math.round(value * 100)} %`
const times = (value: number) => `${value.toFixed(1)}×`

export const TARGETS = {
  'auth-me': {
    bearer: `An authenticated \`GET /api/v1/users/me\` serves at least ${share(L.bearerShareOfHello)} of the requests per second of an Elysia hello-world on the same runtime.`,
  },
  oauth: {
    cached: `With the credential cache on (the default), an OAuth access token serves at least ${share(L.oauthTokenShareOfKey)} of the requests per second of an API key of the same user and scopes, on \`GET /api/v1/users/me\` and on a work-item list alike.`,
    cold: 'No promise with the cache off (`auth.keyCacheTtlSeconds: 0`): token ÷ key there shows what reading the credential on the request\'s path costs (reads per request measured, a key\'s concurrent re-reads sharing one).',
  },
  members: {
    page: `\`GET …/members?size=100\` serves at least ${times(L.membersOfPgbench)} the transactions per second of pgbench running the same two statements.`,
  },
  'work-items': {
    repeated: `\`GET …/work-items?size=100\`, with one request in ten a write, serves at least ${times(L.listRepeatedOfPgbench)} the transactions per second of pgbench running the list's uncached statements.`,
    cold: `\`GET …/work-items?size=100\` with the list cache off serves at least ${times(L.listColdOfPgbench)} the transactions per second of pgbench running the list's uncached statements.`,
    search: `Project search on the realistic corpus answers one client within ${L.searchP99Ms} ms at p99 at a million rows.`,
    searchGrowth: `Project search's p99 on the realistic corpus grows at most ${times(L.searchGrowth)} from 10k to a million rows.`,
  },
  mcp: {
    call: `\`tools/call list_work_items\` serves at least ${times(L.mcpShareOfRest)} the requests per second of its REST twin.`,
  },
  display: {
    spread: `\`POST /api/component\` spread over 50 accounts serves at least ${times(L.displaySpreadOfPgbench)} the transactions per second of pgbench running the per-call statement on the same accounts (${L.displaySpreadPgbenchClients} clients, one script per account), with p99 within ${L.displayP99Ms} ms.`,
    single: `\`POST /api/component\` from one account serves at least ${times(L.displaySingleOfPgbench)} the transactions per second of pgbench running the per-call statement, with p99 within ${L.displayP99Ms} ms.`,
  },
  alerts: {
    rules: `A never-firing alert rule on every component keeps \`POST /api/component\` at ${share(L.alertsShareOfWithout)} or more of its requests per second without rules, with no error.`,
  },
  pages: {
    twenty: `\`GET /pages/{name}\` with 20 components takes at most ${times(L.pagesTimeRatio)} the time of one component (by req/s), every fragment from the cache, every answer 200.`,
  },
  push: {
    fanOut: `One message reaches 10,000 devices at ${L.pushMessagesPerSecond.toLocaleString('en-US')} messages/s or more, each device exactly once.`,
  },
  notifications: {
    fanOut: `One change to a project 10,000 users watch becomes their 10,000 thread updates at ${L.notificationThreadsPerSecond.toLocaleString('en-US')} a second or more, each user's once.`,
    writer: `A comment on a work item of a project 10,000 users watch costs its writer no more than one on an unwatched project: at least ${L.notificationsWriterShare.toFixed(2)}× the requests per second (the change is queued, not fanned out, in its transaction).`,
  },
  'work-push': {
    latency: `A pushed thread (a work item assigned to a user) reaches the fake FCM within ${L.workPushP99Ms / 1000} s of its commit at the 99th percentile under the mixed load, none missing.`,
  },
  'webhooks-delivery': {
    keepsUp: `With one webhook, the service keeps up with ${L.webhooksEventsPerSecond.toLocaleString('en-US')} changes/s: ${share(L.webhooksKeptUpShare)} committed and delivered in the same window, none lost, none twice.`,
  },
  'webhooks-writes': {
    fiveHooks: `\`PATCH …/work-items/{id}\` with 5 webhooks serves at least ${times(L.webhooksWritesShareOfNone)} the requests per second of the same writes with none.`,
  },
  'sign-in': {
    storm: `Under a storm of wrong-password sign-ins the service grows by less than ${L.signInGrowthMiB} MiB, answers only 401, 429 or 503 (the last two with Retry-After), and \`/users/me\` keeps p99 under ${L.signInUsersMeP99Ms} ms.`,
  },
  mixed: {
    memory: `Under a steady mix of everything for ${L.mixedMinimumMinutes} minutes or more, RSS shows no growth trend (second-half slope under ${L.mixedSlopeMiBPerMinute} MiB/min, last quarter within ${times(L.mixedQuarterRatio)} the first) and no answer is a 5xx.`,
  },
  citus: {
    throughput: 'No promise: the hot paths on a coordinator and two workers on one machine are measured against one PostgreSQL and explained.',
    singleShard: 'Every statement of a request runs on one shard, except a lookup by a credential hash on a cache miss.',
  },
  'growth-reads': {
    page0: `At a million work items in one project, the first \`GET …/work-items?size=100\` after a write answers within ${L.coldPageP50Ms} ms at p50 and ${L.coldPageP99Ms} ms at p99.`,
    cursor: `At a million work items, any page reached by cursor answers within ${L.coldPageP50Ms} ms at p50 and ${L.coldPageP99Ms} ms at p99 when read after a write.`,
    growth: `From 10k to a million work items, cold page 0 and cursor pages grow at most ${times(L.coldPageGrowth)} at p50 and p99.`,
    filtered: `At a million work items, cold page 0 filtered by status or assignee answers within ${L.filteredPageP50Ms} ms at p50.`,
    refused: `\`page=5000\`, past the offset bound, is refused (400 naming \`page\`) at every size within ${L.coldPageP50Ms} ms at p50 and ${L.coldPageP99Ms} ms at p99.`,
  },
  'growth-writes': {
    rename: 'No promise: `PATCH` renames on a grown project are measured at each size.',
    status: `A \`PATCH\` that moves the maintained counts (a status change) serves at least ${times(L.statusOverRename)} the requests per second of a rename, in the same run.`,
  },
  answers: {
    bodies: 'No promise: the figures show why a long answer is sent as a stream of one chunk.',
  },
  driver: {
    accessCheck: 'No promise: the figures show where the list reads lose between postgres.js and the database.',
  },
  fields: {
    filters: 'No promise: custom-field filters and bulk creates are measured on 100k work items.',
  },
  bulk: {
    latency: `A \`POST …/work-items/bulk\` of 100 plain items answers one client within ${L.bulkCreateP50Ms} ms at the median.`,
    ratio: `A \`POST …/work-items/bulk\` of 100 plain items takes at most ${times(L.bulkOverSingle)} the median of a single \`POST …/work-items\`, in the same run.`,
    throughput: `4 clients sending bulk creates of 100 plain items into one project create at least ${L.bulkItemsPerSecond.toLocaleString('en-US')} work items a second.`,
    robustness: '8 clients sending bulk creates of 100 into one project get no 5xx, and the project keeps its numbers 1..N without a gap and its maintained counts equal to its rows.',
  },
  export: {
    memory: `Exporting a project of a million work items (\`GET …/projects/{projectId}/export\`, NDJSON, read as fast as the client can) keeps the service's peak RSS (VmHWM) under ${L.exportPeakRssMiB} MiB.`,
    throughput: 'No promise: the export\'s work items per second are shown against psql reading the same rows with the same statement.',
    slowReader: `While a client reads the export at 200 KB/s for 10 s, the service's RSS shows no growth (its least-squares trend rises at most ${L.exportSlowReaderGrowthMiB} MiB over the 10 s: the stream waits for the client), and the export's snapshot is given back once the client goes away.`,
  },
  import: {
    throughput: `Importing a project from the export's NDJSON (\`POST …/projects/{projectId}/import\`, 100,000 work items with an entry per ten and a relationship per hundred, one transaction) writes at least ${L.importItemsPerSecond.toLocaleString('en-US')} work items a second, every count exact afterwards.`,
  },
  'work-sources': {
    recompute: `At a million work items in one project, recomputing one bound component (its recompute transaction, after one change) takes at most ${L.workSourceRecomputeMs} ms at p95, for every measure.`,
    burst: `A burst of 1,000 writes in one second to a project with 20 bound components costs each component at most ${L.workSourceRecomputationsPerSecond} recomputations in any second, and every component's final data equals what SQL over the rows says.`,
  },
} as const satisfies Record<string, Record<string, string>>

/** The service's peak RSS across every benchmark. */
export const PEAK_RSS_TARGET = `The service's peak RSS (VmHWM) stays within ${L.peakRssMiB} MiB in every benchmark.`

export type ScenarioName = keyof typeof TARGETS

/** The order of the summary and of `npm run bench`. */
export const SCENARIOS = Object.keys(TARGETS) as ScenarioName[]
