/** Seeding for benchmarks: organizations, users and keys made through the auth plugin's face (accountsFor), projects by SQL. */
import { sql } from 'drizzle-orm'
import { accountsFor } from '../../plugins/auth/api'
import { createChangeFeed } from '../../src/changes'
import { queryRows, type Database } from '../../src/db'
import { createWrites } from '../../src/writes'

/** Who seeds: the command line (no user, no key, no request), as the audit records it. */
export const operator = { userId: null, apiKeyId: null, via: 'cli' as const, requestId: null }

/**
 * The auth plugin's accounts on `db`, as the operator CLI makes them, keys allowed `scopes`; cheap
 * hashing for seeded passwords (scrypt cost 2^10, the service's least; the format is the real one).
 */
const accounts = (db: Database, scopes: Iterable<string> = []) => accountsFor(createWrites(db, createChangeFeed([])), { knownScopes: scopes, passwordHashLogN: 10 })

export interface Seeded {
  organizationId: string
  userId: string
  projectId: string
  secret: string
  /** The user's email (their password: "bench password"). */
  email: string
}

/** A new organization named `name`; its id. */
export async function seedBareOrganization(db: Database, name = 'Bench'): Promise<string> {
  return (await accounts(db).createOrganization(operator, { name })).id
}

/** A user of the organization (password "bench password"); their id. */
export async function seedUser(db: Database, organizationId: string, user: { email: string; username: string; displayName: string; role?: 'member' | 'administrator' | 'superadministrator' }): Promise<string> {
  const created = await accounts(db).createUser(operator, { organizationId, password: 'bench password', ...user, role: user.role ?? 'member' })
  return created.user.id
}

/** An organization with one user, their API key (`scopes`) and a project the user owns. */
export async function seedOrganization(db: Database, options: { scopes: string[]; role?: 'member' | 'administrator' | 'superadministrator' }): Promise<Seeded> {
  const organizationId = await seedBareOrganization(db)
  const email = `bench-${organizationId}@example.com`
  const userId = await seedUser(db, organizationId, { email, username: 'bench', displayName: 'Bench', role: options.role ?? 'member' })
  const { secret } = await accounts(db, options.scopes).createApiKey(operator, userId, { name: 'bench', scopes: options.scopes })
  const projectId = await seedProject(db, organizationId, userId, 'Bench project')
  return { organizationId, userId, projectId, secret, email }
}

/** A project of the organization that `owner` owns; its id. */
export async function seedProject(db: Database, organizationId: string, owner: string, name: string): Promise<string> {
  // Its key is the column's random default (P + 8 hex digits), recorded so `<key>-<number>` resolves as for any project.
  const [project] = await queryRows<{ id: string; key: string }>(db, sql`insert into projects (id, organization_id, name, created_by) values (gen_random_uuid(), ${organizationId}, ${name}, ${owner}) returning id, key`)
  await db.execute(sql`insert into project_keys (key, organization_id, project_id) values (${project!.key}, ${organizationId}, ${project!.id})`)
  await db.execute(sql`insert into project_members (project_id, user_id, organization_id, access_level) values (${project!.id}, ${owner}, ${organizationId}, 'owner')`)
  return project!.id
}

/** `count` users of the organization (`<prefix>1`… with an unusable password), made by SQL; with `project`, viewers of it. */
export async function seedMembers(db: Database, organizationId: string, count: number, project?: string, prefix = 'member'): Promise<void> {
  await db.execute(sql`insert into users (id, organization_id, email, username, display_name, password_hash)
    select gen_random_uuid(), ${organizationId}, ${prefix} || i || '@bench.example', ${prefix} || i, 'Member ' || i, 'scrypt$none'
    from generate_series(1, ${count}) as i`)
  if (project)
    await db.execute(sql`insert into project_members (project_id, user_id, organization_id, access_level)
      select ${project}, id, ${organizationId}, 'viewer' from users where organization_id = ${organizationId} and username like ${`${prefix}%`}`)
}
