/**
 * Display accounts for the benchmarks of `POST /api/component`: users each with a display key and a
 * page holding one bar chart, and the call's body.
 */
import { sql } from 'drizzle-orm'
import { createDisplayAccount } from '../../plugins/display/api'
import { queryRows, type Database } from '../../src/db'
import { hashSecret } from '../../src/secrets'
import { seededDatabase } from '../lib/database'
import { seedBareOrganization, seedUser } from './organization'

/** The chart every call sends. */
export const CHART = {
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

/** A display key for `user` with a daily limit no benchmark reaches (`limit`). */
export const displayKey = (db: Database, user: { id: string; organizationId: string }, limit = 1_000_000_000) => createDisplayAccount(db, user, limit)

/** `count` display accounts in the organization, each with a page holding one bar chart. */
export async function seedDisplayAccounts(db: Database, organizationId: string, count: number): Promise<Account[]> {
  const accounts: Account[] = []
  for (let i = 0; i < count; i++) {
    const userId = await seedUser(db, organizationId, { email: `display${i}@bench.example`, username: `display${i}`, displayName: `Display ${i}` })
    const apiKey = await displayKey(db, { id: userId, organizationId })
    const [page] = await queryRows<{ id: string }>(db, sql`insert into pages (id, organization_id, name, created_by) values (gen_random_uuid(), ${organizationId}, ${`board-${i}`}, ${userId}) returning id`)
    const [component] = await queryRows<{ id: string }>(db, sql`insert into components (id, organization_id, page_id, type) values (gen_random_uuid(), ${organizationId}, ${page!.id}, 'barChart') returning id`)
    accounts.push({ apiKey, componentId: component!.id })
  }
  return accounts
}

/** The body of one `POST /api/component` call updating the account's chart. */
export const componentBody = (account: Account, timestamp = 1_800_000_000) => JSON.stringify({ componentId: account.componentId, apiKey: account.apiKey, timestamp, data: CHART })

/** Display accounts of the display benchmark's shape: one organization, this many accounts. */
export const DISPLAY_ACCOUNTS = 50

/**
 * A fresh database with DISPLAY_ACCOUNTS display accounts of one organization, and a table
 * `bench_display` by which pgbench picks an account by number (its key hash and component).
 */
export async function seedDisplayBench(database: string): Promise<{ url: string; organizationId: string; accounts: Account[] }> {
  const { url, seeded } = await seededDatabase(database, async (db) => {
    const organizationId = await seedBareOrganization(db)
    const accounts = await seedDisplayAccounts(db, organizationId, DISPLAY_ACCOUNTS)
    await db.execute(sql`create table bench_display (n int primary key, key_hash text not null, component_id uuid not null)`)
    for (const [i, account] of accounts.entries()) await db.execute(sql`insert into bench_display values (${i + 1}, ${hashSecret(account.apiKey)}, ${account.componentId})`)
    await db.execute(sql`analyze`)
    return { organizationId, accounts }
  })
  return { url, ...seeded }
}
