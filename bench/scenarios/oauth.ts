/**
 * OAuth access tokens (`wto_…`) against API keys (`wtk_…`) of the same user with the same scopes,
 * alternating in one run: `GET /api/v1/users/me` and a work-item list with the credential cache on
 * (the default, `auth.keyCacheTtlSeconds` 30 s), then `users/me` on a service with the cache off
 * (`auth.keyCacheTtlSeconds: 0`), where each credential's database read is on the request's path.
 * The grant and its access token are seeded by SQL as plugins/auth/oauth/flow.ts makes them: a
 * routed secret naming the organization, stored as its SHA-256 hash.
 */
import { cpuMeter } from '../lib/cpu'
import { seededDatabase, withClient } from '../lib/database'
import { startService, type RunningProcess } from '../lib/processes'
import { recordResult, sectionHead, writeSection } from '../lib/results'
import { CONNECTIONS, DURATION_SECONDS } from '../lib/settings'
import { best, percentile, round } from '../lib/stats'
import { checkAnswers, throughput, wrk, type LoadResult, type Throughput } from '../lib/wrk'
import { seedOrganization, type Seeded } from '../seed/organization'
import { seedWork } from '../seed/work'
import { queryText, type Database } from '../../src/db'
import { generateRoutedSecret, hashSecret } from '../../src/secrets'
import { TARGETS } from '../targets'

export const name = 'oauth'
export const target = TARGETS[name]

const SCOPES = ['users:read', 'work_items:read']
/** The access tokens' prefix (plugins/auth/oauth/model.ts ACCESS_PREFIX; a benchmark reaches a plugin only through its api.ts). */
const ACCESS_PREFIX = 'wto'
const ROUNDS = Number(process.env.BENCH_OAUTH_ROUNDS ?? 3)
const LIST_SIZE = 50
const CACHED_PORT = 3851
const COLD_PORT = 3852

type Credential = 'key' | 'token'
const CREDENTIALS: Credential[] = ['key', 'token']

/** An approved grant of the seeded user (the key's scopes, for `/api/v1`) and a live access token of it, as flow.ts's approve and issue write them. */
async function seedGrant(db: Database, seeded: Seeded): Promise<{ token: string; grantId: string }> {
  const token = generateRoutedSecret(ACCESS_PREFIX, seeded.organizationId)
  const [grant] = await queryText<{ id: string }>(
    db,
    `insert into oauth_grants (id, organization_id, user_id, client_id, client_name, redirect_uri, scopes, audience)
     values (gen_random_uuid(), $1, $2, 'https://client.bench.example/oauth.json', 'Bench client', 'http://127.0.0.1:9/callback', $3::text[], 'api') returning id`,
    [seeded.organizationId, seeded.userId, SCOPES],
  )
  await queryText(db, `insert into oauth_tokens (token_hash, organization_id, grant_id, kind, expires_at) values ($1, $2, $3, 'access', now() + interval '10 years')`, [
    hashSecret(token),
    seeded.organizationId,
    grant!.id,
  ])
  return { token, grantId: grant!.id }
}

/** Statements that read each credential's table so far (index and sequential scans; a connection's counts reach the view by its close at the latest). */
async function credentialReads(url: string): Promise<Record<Credential, number>> {
  return withClient(url, async (sql) => {
    const rows = await sql<Array<{ relname: string; scans: string }>>`
      select relname, coalesce(idx_scan, 0) + coalesce(seq_scan, 0) as scans from pg_stat_user_tables where relname in ('api_keys', 'oauth_tokens')`
    const of = (table: string) => Number(rows.find((row) => row.relname === table)?.scans ?? 0)
    return { key: of('api_keys'), token: of('oauth_tokens') }
  })
}

/** One measured run, with the CPU it cost: the service's and PostgreSQL's µs per answer, and the cores the rest of the machine took meanwhile (noise). */
interface Run extends LoadResult {
  serviceMicros: number
  postgresMicros: number
  otherCores: number
}

interface Pair {
  key: Run[]
  token: Run[]
}

/** A credential's figures in one target: its best run, and the median CPU per answer over its runs. */
export interface Shape extends Throughput {
  serviceMicros: number
  postgresMicros: number
}

const median = (values: number[]) => percentile(values, 0.5)
const shapeOf = (runs: Run[]): Shape => ({ ...throughput(best(runs)), serviceMicros: median(runs.map((r) => r.serviceMicros)), postgresMicros: median(runs.map((r) => r.postgresMicros)) })

/** Each credential's figures and token ÷ key: of the best runs' req/s, and of the service's CPU per answer. */
const bestOf = (pair: Pair) => {
  const key = shapeOf(pair.key)
  const token = shapeOf(pair.token)
  return { key, token, ratio: token.requestsPerSecond / key.requestsPerSecond, cpuRatio: token.serviceMicros / key.serviceMicros }
}

export async function run(): Promise<void> {
  const { url, seeded } = await seededDatabase('worktrack_bench_oauth', async (db) => {
    const seeded = await seedOrganization(db, { scopes: SCOPES })
    await seedWork(db, seeded, { workItems: 100, entries: 0 })
    return { ...seeded, ...(await seedGrant(db, seeded)) }
  })
  const secrets: Record<Credential, string> = { key: seeded.secret, token: seeded.token }
  const mePath = '/api/v1/users/me'
  const listPath = `/api/v1/projects/${seeded.projectId}/work-items?size=${LIST_SIZE}`
  const load = (port: number, path: string, credential: Credential, duration?: number) =>
    wrk(`http://127.0.0.1:${port}${path}`, { headers: { authorization: `Bearer ${secrets[credential]}` }, duration })
  /** A measured run, its answers checked, with the CPU the service and PostgreSQL spent on it. */
  const measure = async (service: RunningProcess, label: string, path: string, credential: Credential): Promise<Run> => {
    const meter = cpuMeter(service.pid)
    const result = await load(service.port, path, credential)
    const cpu = meter()
    checkAnswers(`oauth: ${label} with a ${credential}`, result)
    const micros = (cores: number) => (cores * cpu.seconds * 1e6) / result.requests
    return { ...result, serviceMicros: micros(cpu.service), postgresMicros: micros(cpu.postgres), otherCores: cpu.other }
  }

  /** Both credentials answer as the same user, the token as its grant, before anything is timed. */
  const checkCredentials = async (port: number) => {
    for (const credential of CREDENTIALS) {
      const answer = await fetch(`http://127.0.0.1:${port}${mePath}`, { headers: { authorization: `Bearer ${secrets[credential]}` } })
      const body = (await answer.json()) as { data?: { user?: { id?: string }; key?: unknown; grant?: { id?: string } } }
      const data = body.data
      if (answer.status !== 200 || data?.user?.id !== seeded.userId || (credential === 'token' ? data?.grant?.id !== seeded.grantId : !data?.key))
        throw new Error(`oauth: ${credential} on ${mePath} answered ${answer.status} ${JSON.stringify(body).slice(0, 300)}`)
    }
    const list = await fetch(`http://127.0.0.1:${port}${listPath}`, { headers: { authorization: `Bearer ${secrets.token}` } })
    if (list.status !== 200) throw new Error(`oauth: token on the list answered ${list.status} ${(await list.text()).slice(0, 300)}`)
  }

  const cached = { me: { key: [], token: [] } as Pair, list: { key: [], token: [] } as Pair }
  const cold: Pair = { key: [], token: [] }
  /** Requests each credential sent to the cold service, warm-ups included (the reads are counted over all of them). */
  const coldRequests: Record<Credential, number> = { key: 0, token: 0 }
  let peakRssMiB = 0

  // The cache on (the default): a credential is read once per 30 s; the rest is CPU.
  const service = await startService(url, CACHED_PORT)
  try {
    await checkCredentials(CACHED_PORT)
    for (const path of [mePath, listPath]) for (const credential of CREDENTIALS) await load(CACHED_PORT, path, credential, 2) // warm-up
    // Alternate every target so drift on a shared machine hits all alike.
    for (let round = 0; round < ROUNDS; round++)
      for (const [shape, path] of [['me', mePath], ['list', listPath]] as const)
        for (const credential of CREDENTIALS) cached[shape][credential].push(await measure(service, shape, path, credential))
    peakRssMiB = service.peakRssMiB()
  } finally {
    await service.stop()
  }

  // The cache off: every request reads its credential (unless it shares one in flight).
  const readsBefore = await credentialReads(url)
  const uncached = await startService(url, COLD_PORT, { config: { auth: { keyCacheTtlSeconds: 0 } } })
  try {
    await checkCredentials(COLD_PORT)
    for (const credential of CREDENTIALS) coldRequests[credential] += (await load(COLD_PORT, mePath, credential, 2)).requests + 1 // warm-up (+ the check)
    for (let round = 0; round < ROUNDS; round++)
      for (const credential of CREDENTIALS) {
        const result = await measure(uncached, 'cold me', mePath, credential)
        cold[credential].push(result)
        coldRequests[credential] += result.requests
      }
    peakRssMiB = Math.max(peakRssMiB, uncached.peakRssMiB())
  } finally {
    await uncached.stop()
  }
  coldRequests.token += 1 // the check's list request
  const readsAfter = await credentialReads(url)
  const readsPerRequest = (credential: Credential) => (readsAfter[credential] - readsBefore[credential]) / coldRequests[credential]

  const me = bestOf(cached.me)
  const list = bestOf(cached.list)
  const coldMe = bestOf(cold)
  const reads = { key: readsPerRequest('key'), token: readsPerRequest('token') }
  const row = (label: string, t: Shape) => `| ${label} | ${round(t.requestsPerSecond)} | ${round(t.p50, 2)} | ${round(t.p99, 2)} | ${round(t.serviceMicros, 1)} | ${round(t.postgresMicros, 1)} |`
  const share = (ratio: number) => `${round(ratio * 100, 1)} %`
  const perRun = (pair: Pair) => `key ${pair.key.map((r) => round(r.requestsPerSecond)).join(', ')}; token ${pair.token.map((r) => round(r.requestsPerSecond)).join(', ')}`
  const allRuns = [...Object.values(cached).flatMap((pair) => [...pair.key, ...pair.token]), ...cold.key, ...cold.token]
  const otherCores = allRuns.map((r) => r.otherCores)
  const pairRatios = (pair: Pair) => pair.token.map((r, i) => share(r.requestsPerSecond / pair.key[i]!.requestsPerSecond)).join(', ')
  writeSection(
    name,
    `## OAuth access token vs API key: \`users/me\` and a work-item list, cache on and off

${sectionHead(`\`npm run bench -- oauth\` (wrk, 1 thread, ${CONNECTIONS} connections, ${DURATION_SECONDS} s per run, ${ROUNDS} alternating rounds of every target after a 2 s warm-up each, best run shown; service on the PostgreSQL server)`)}
- One user, an API key and an OAuth access token (a grant for \`/api/v1\`, seeded by SQL as the token endpoint writes it: a routed \`wto_\` secret, its SHA-256 stored) with the same scopes (${SCOPES.map((scope) => `\`${scope}\``).join(', ')}); a project of 100 work items, the list \`GET …/work-items?size=${LIST_SIZE}\` with the list cache on (the default).
- **Cached**: the default configuration (\`auth.keyCacheTtlSeconds\` 30): each credential is read once, then checked from memory. **Cold**: a second service with \`auth.keyCacheTtlSeconds: 0\`, where a credential read more than a millisecond ago is read again (key: \`api_keys\` ⋈ \`users\`; token: \`oauth_tokens\` ⋈ \`oauth_grants\` ⋈ \`users\`). Reads per request: statements that scanned \`api_keys\` / \`oauth_tokens\` during the cold service's life (\`pg_stat_user_tables\`), over the requests sent with that credential. Concurrent re-reads of either share one read in flight (plugins/auth/authenticator.ts and plugins/auth/oauth/verifier.ts, \`reload\`).
- CPU per answer: the service's and PostgreSQL's CPU time (/proc) during each measured run over its answers, the median of the runs: steadier than req/s on a shared machine.

| target | req/s | p50 ms | p99 ms | service CPU µs / answer | PostgreSQL CPU µs / answer |
|---|---:|---:|---:|---:|---:|
${row('`users/me`, API key (cached)', me.key)}
${row('`users/me`, OAuth token (cached)', me.token)}
${row(`list \`size=${LIST_SIZE}\`, API key (cached)`, list.key)}
${row(`list \`size=${LIST_SIZE}\`, OAuth token (cached)`, list.token)}
${row('`users/me`, API key (cold: cache off)', coldMe.key)}
${row('`users/me`, OAuth token (cold: cache off)', coldMe.token)}

**Token ÷ key (req/s): \`users/me\` ${share(me.ratio)}, list ${share(list.ratio)} with the cache on; ${share(coldMe.ratio)} with it off** (credential reads per request, cold: key ${round(reads.key, 3)}, token ${round(reads.token, 3)}). Service CPU per answer, token ÷ key: users/me ${round(me.cpuRatio, 2)}×, list ${round(list.cpuRatio, 2)}×, cold users/me ${round(coldMe.cpuRatio, 2)}×. ${target.cached} ${target.cold}
Per-run req/s (alternating) — users/me: ${perRun(cached.me)} (token ÷ key by round ${pairRatios(cached.me)}); list: ${perRun(cached.list)} (${pairRatios(cached.list)}); cold users/me: ${perRun(cold)} (${pairRatios(cold)}). CPU µs per answer: median of the runs; the rest of the machine (not the service, PostgreSQL, wrk's parent or the bench) took ${round(Math.min(...otherCores), 2)}–${round(Math.max(...otherCores), 2)} cores during the runs. Peak RSS of the service: ${round(peakRssMiB, 1)} MiB.`,
  )
  recordResult(name, {
    me: { key: me.key, token: me.token },
    list: { key: list.key, token: list.token },
    cold: { key: coldMe.key, token: coldMe.token, keyReadsPerRequest: reads.key, tokenReadsPerRequest: reads.token },
    listSize: LIST_SIZE,
    peakRssMiB,
  })
  console.log(
    `oauth: token ÷ key — users/me ${share(me.ratio)} (CPU ${round(me.cpuRatio, 2)}×), list ${share(list.ratio)} (CPU ${round(list.cpuRatio, 2)}×) cached; users/me cold ${share(coldMe.ratio)} (CPU ${round(coldMe.cpuRatio, 2)}×; reads/request key ${round(reads.key, 3)}, token ${round(reads.token, 3)})`,
  )
}
