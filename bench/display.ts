/**
 * `POST /api/component` against pgbench running the same statement (key check + counter upsert +
 * component update, one transaction per call), in two shapes: calls spread over 50 accounts,
 * and all calls from one account (one counter row serialises them). Target ≥ 1.0 of pgbench.
 */
import { writeFileSync } from 'node:fs'
import { sql } from 'drizzle-orm'
import { createDisplayAccount } from '../plugins/display/accounts'
import { COMPONENT_UPDATE_SQL } from '../plugins/display/update'
import { PasswordHasher } from '../plugins/auth/password'
import { createOrganization, createUser } from '../plugins/auth/service'
import { openDatabase, queryRows, type Database } from '../src/db'
import { hashSecret } from '../src/secrets'
import { migrate } from '../src/migrate'
import { asPgbench, CONNECTIONS, DURATION_SECONDS, freshDatabase, machine, nodeLoad, pgbench, recordResult, round, startProcess, writeSection, type LoadResult } from './lib'
import { operator } from './seed'

const ACCOUNTS = 50
const DATA = {
  type: 'barChart',
  backgroundColor: '#f8fafc',
  xNumber: false,
  height: 220,
  points: [
    { x: 'Mon', y: 12, color: '#2563eb' },
    { x: 'Tue', y: 19.5, color: '#7c3aed' },
    { x: 'Wed', y: 7, color: '#db2777' },
  ],
}

export interface Account {
  apiKey: string
  componentId: string
}

/** `count` display accounts in the organization, each with a page holding one bar chart. */
export async function seedDisplayAccounts(db: Database, organizationId: string, count: number): Promise<Account[]> {
  const accounts: Account[] = []
  for (let i = 0; i < count; i++) {
    const { user } = await createUser(
      db,
      operator,
      { organizationId, email: `display${i}@bench.example`, username: `display${i}`, displayName: `Display ${i}`, role: 'member', password: 'bench password' },
      { hasher: new PasswordHasher({ logN: 10, maxConcurrent: 8 }), hooks: [] },
    )
    const apiKey = await createDisplayAccount(db, { id: user.id, organizationId }, 1_000_000_000)
    const [page] = await queryRows<{ id: string }>(db, sql`insert into pages (id, organization_id, name, created_by) values (gen_random_uuid(), ${organizationId}, ${`board-${i}`}, ${user.id}) returning id`)
    const [component] = await queryRows<{ id: string }>(db, sql`insert into components (id, organization_id, page_id, type) values (gen_random_uuid(), ${organizationId}, ${page!.id}, 'barChart') returning id`)
    accounts.push({ apiKey, componentId: component!.id })
  }
  return accounts
}

/** The body of one `POST /api/component` call updating the account's chart. */
export const componentBody = (account: Account) => JSON.stringify({ componentId: account.componentId, apiKey: account.apiKey, timestamp: 1_800_000_000, data: DATA })

async function seed(url: string): Promise<Account[]> {
  const database = await openDatabase(url)
  await migrate(database.db)
  const organization = await createOrganization(database.db, operator, { name: 'Bench' })
  const accounts = await seedDisplayAccounts(database.db, organization.id, ACCOUNTS)
  // pgbench picks an account by number: its key hash and component.
  await database.db.execute(sql`create table bench_display (n int primary key, key_hash text not null, component_id uuid not null)`)
  for (const [i, account] of accounts.entries())
    await database.db.execute(sql`insert into bench_display values (${i + 1}, ${hashSecret(account.apiKey)}, ${account.componentId})`)
  await database.db.execute(sql`analyze`)
  await database.close()
  return accounts
}

async function load(url: string, bodies: string[]): Promise<LoadResult> {
  const file = `/tmp/worktrack-load-${process.pid}.json`
  writeFileSync(file, JSON.stringify({ url, method: 'POST', headers: { 'content-type': 'application/json' }, bodies, connections: CONNECTIONS, duration: DURATION_SECONDS }))
  return nodeLoad(['bench/load.cjs', file], 'inherit')
}

export async function benchDisplay(): Promise<void> {
  const url = await freshDatabase('worktrack_bench_display')
  const accounts = await seed(url)
  const statement = asPgbench(COMPONENT_UPDATE_SQL, ['key', 'component', 'data', 'ts', 'type'])
  const spreadScript = `\\set n random(1, ${ACCOUNTS})\nselect key_hash as key, component_id as component from bench_display where n = :n \\gset\n${statement}`
  const fixed = { data: JSON.stringify(DATA), ts: '1800000000', type: 'barChart' }

  const service = await startProcess([process.execPath, 'entries/bun.ts'], { DATABASE_URL: url, SERVICE_CONFIG: '/nonexistent.json' }, 3871)
  const target = 'http://127.0.0.1:3871/api/component'
  let spread: LoadResult, single: LoadResult, rss: number
  try {
    const probe = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: componentBody(accounts[0]!) })
    if (probe.status !== 200) throw new Error(`POST /api/component answered ${probe.status}: ${await probe.text()}`)
    spread = await load(target, accounts.map(componentBody))
    single = await load(target, [componentBody(accounts[0]!)])
    rss = service.peakRssMiB()
  } finally {
    await service.stop()
  }
  // The ceiling is the better of 64 clients (the load's connections) and 10 (the service's pool).
  const ceiling = async (script: string, variables: Record<string, string>) =>
    Math.max(await pgbench(url, script, { variables }), await pgbench(url, script, { variables, clients: 10 }))
  const spreadCeiling = await ceiling(spreadScript, fixed)
  const singleCeiling = await ceiling(statement, { ...fixed, key: hashSecret(accounts[0]!.apiKey), component: accounts[0]!.componentId })
  const row = (label: string, result: LoadResult, ceiling: number) =>
    `| ${label} | ${round(result.requestsPerSecond)} | ${result.p50} / ${result.p99} | ${round(ceiling)} | **${round(result.requestsPerSecond / ceiling, 2)}** | ${result.errors + result.non2xx} |`
  const date = new Date().toISOString()
  writeSection(
    'display',
    `## Display API: \`POST /api/component\` vs pgbench

- Date: ${date} · Machine: ${machine()}
- Command: \`npm run bench -- display\` (autocannon from Node, ${CONNECTIONS} connections, ${DURATION_SECONDS} s; pgbench \`-M prepared\`, 64 clients, running the service's own statement — key check, counter upsert with the limit check, component update — one transaction per call; for the spread shape pgbench first looks the account up by number, one indexed select)
- One statement per valid call: the key, the count and the update in a single round trip; live viewers are told by one NOTIFY per 25 ms batch after commit (not part of either side here).

| shape | endpoint req/s | p50 / p99 ms | pgbench TPS | ratio (target ≥ 1.0) | errors or non-2xx |
|---|---:|---:|---:|---:|---:|
${row(`spread over ${ACCOUNTS} accounts`, spread, spreadCeiling)}
${row('one account', single, singleCeiling)}

Peak RSS of the service: ${round(rss, 1)} MiB.`,
  )
  const figures = (result: LoadResult, ceiling: number) => ({ requestsPerSecond: result.requestsPerSecond, p50: result.p50, p99: result.p99, pgbench: ceiling })
  recordResult('display', {
    date,
    machine: machine(),
    command: 'npm run bench -- display',
    figures: { spread: figures(spread, spreadCeiling), single: figures(single, singleCeiling), peakRssMiB: rss, errors: spread.errors + spread.non2xx + single.errors + single.non2xx },
  })
  console.log(`display: spread ${round(spread.requestsPerSecond)} vs ${round(spreadCeiling)}; single ${round(single.requestsPerSecond)} vs ${round(singleCeiling)}`)
}
