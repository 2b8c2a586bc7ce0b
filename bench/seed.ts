/** Seeding for benchmarks: an organization, a user, a key and a project the user owns. */
import { sql } from 'drizzle-orm'
import { PasswordHasher } from '../plugins/auth/password'
import { createApiKey, createOrganization, createUser } from '../plugins/auth/service'
import { createChangeFeed } from '../src/changes'
import { createWrites } from '../src/writes'
import { queryRows, type Database } from '../src/db'

/** Who seeds: the command line (no user, no key, no request), as the audit records it. */
export const operator = { userId: null, apiKeyId: null, via: 'cli' as const, requestId: null }

export interface Seeded {
  organizationId: string
  userId: string
  projectId: string
  secret: string
}

export async function seedOrganization(db: Database, options: { scopes: string[]; role?: 'member' | 'administrator' | 'superadministrator' }): Promise<Seeded> {
  const writes = createWrites(db, createChangeFeed([]))
  const organization = await createOrganization(writes, operator, { name: 'Bench' })
  const { user } = await createUser(
    writes,
    operator,
    { organizationId: organization.id, email: `bench-${organization.id}@example.com`, username: 'bench', displayName: 'Bench', role: options.role ?? 'member', password: 'bench password' },
    { hasher: new PasswordHasher({ logN: 10, maxConcurrent: 8 }), hooks: [] },
  )
  const { secret } = await createApiKey(writes, operator, user.id, { name: 'bench', scopes: options.scopes }, new Set(options.scopes))
  const [project] = await queryRows<{ id: string }>(
    db,
    sql`insert into projects (id, organization_id, name, created_by) values (gen_random_uuid(), ${organization.id}, 'Bench project', ${user.id}) returning id`,
  )
  await db.execute(sql`insert into project_members (project_id, user_id, organization_id, access_level) values (${project!.id}, ${user.id}, ${organization.id}, 'owner')`)
  return { organizationId: organization.id, userId: user.id, projectId: project!.id, secret }
}
