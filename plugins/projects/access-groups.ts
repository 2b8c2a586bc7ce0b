/**
 * Grouped access checks. Nearly every project-scoped read starts with the caller's access check
 * (with the list versions, for a list), and a cached list answer costs nothing else; so on a busy
 * instance the checks are most of the statements sent, and each costs the driver's round trip
 * (about 30 µs of this process's CPU; bench/RESULTS.md, "driver"). Checks that arrive while
 * `concurrency` statements are in flight wait in line and go together as ONE statement (an
 * `unnest` of the callers' projects, users and roles), whose rows answer each caller exactly as
 * its own statement would have: the same level and the same versions, read in a snapshot taken
 * after the caller arrived. A lone check runs at once as the single statement it always was.
 *
 * On Citus a group holds one organization's checks and its statement names that organization (it
 * runs on its shard alone); on plain PostgreSQL and PGlite a group may hold several
 * organizations' checks. The line is the core's statement batcher (src/batcher.ts): a group
 * statement the server refuses (its transaction rolled back) answers no caller with its error, its
 * checks run again one by one; a lost connection rejects the group's checks with its error.
 */
import { sql, type SQL } from 'drizzle-orm'
import { citusKnown } from '../../src/citus'
import type { Database } from '../../src/db'
import { StatementBatcher } from '../../src/batcher'
import type { AccessLevel } from './api'
import { compileStatement, runStatement, type CompiledStatement } from '../../src/statements'

/** One caller's check: its project (a UUID), organization, user and whether it is a superadministrator. */
export interface AccessCheck {
  projectId: string
  organizationId: string
  userId: string
  superadministrator: boolean
}

/** The project's row, the caller's level on it (null: none) and, when asked, the list versions. */
export interface AccessRow {
  id: string
  organizationId: string
  level: AccessLevel | null
  projectVersion?: string | number | null
  organizationVersion?: string | number | null
}

export interface AccessGroupOptions {
  /** Group checks that arrive while statements run (false: every check is its own statement). */
  enabled: boolean
  /** Most checks in one statement. */
  maxChecks: number
  /** Check statements in flight at once per instance; checks beyond wait and group. */
  concurrency: number
}

/** The statements a check runs alone: the caller's level (and the versions) as written in access.ts. */
export interface LoneChecks {
  run(check: AccessCheck, versions: boolean): Promise<AccessRow | undefined>
}

/**
 * The grouped statement, answering the rows of the single statements for each check in `i`, by
 * its ordinal. `organization`: the checks of one organization, every table read in it (on Citus:
 * its shard alone); `checks`: each check in its own organization.
 */
export function groupStatement(scope: 'organization' | 'checks', levelOf: (project: SQL, organization: SQL, user: SQL) => SQL): CompiledStatement {
  const organization = scope === 'organization' ? sql`${sql.placeholder('organization')}::uuid` : sql`i.organization_id`
  const organizations = scope === 'organization' ? sql`` : sql`, ${sql.placeholder('organizationIds')}::uuid[]`
  const columns = scope === 'organization' ? sql`project_id, user_id, role, ord` : sql`project_id, user_id, role, organization_id, ord`
  return compileStatement(sql`select i.ord::int as ord, p.id, p.organization_id as "organizationId",
    case when i.role = 'superadministrator' then 'owner'::access_level else ${levelOf(sql`p.id`, organization, sql`i.user_id`)} end as level,
    (select v.version from change_versions v where v.scope_id = p.id and v.organization_id = ${organization}) as "projectVersion",
    (select v.version from change_versions v where v.scope_id = ${organization} and v.organization_id = ${organization}) as "organizationVersion"
  from unnest(${sql.placeholder('projectIds')}::uuid[], ${sql.placeholder('userIds')}::uuid[], ${sql.placeholder('roles')}::text[]${organizations})
    with ordinality as i(${columns})
  join projects p on p.id = i.project_id and p.organization_id = ${organization}`)
}

/** A check in the line: the caller's, and whether its statement reads the list versions. */
export interface LineCheck extends AccessCheck {
  versions: boolean
}

/** The per-instance line of access checks run on the pool (a check inside a transaction runs there, alone). */
export type AccessGroups = StatementBatcher<LineCheck, AccessRow | undefined>

/**
 * The line: each check's own statement (`lone`) and, for checks that wait, the grouped statement
 * of their organization when they are of one, else the spanning one.
 */
export function accessGroups(
  db: Database,
  options: AccessGroupOptions,
  lone: LoneChecks,
  statements: { organization: CompiledStatement; checks: CompiledStatement },
): AccessGroups {
  return new StatementBatcher<LineCheck, AccessRow | undefined>(
    { enabled: options.enabled, maxItems: options.maxChecks, concurrency: options.concurrency, citus: citusKnown(db) },
    {
      one: (check) => lone.run(check, check.versions),
      async group(checks, organizationId, organizationIds) {
        const rows = await runStatement<AccessRow & { ord: number }>(db, organizationId ? statements.organization : statements.checks, {
          projectIds: checks.map((check) => check.projectId),
          userIds: checks.map((check) => check.userId),
          // As text: postgres.js would type a boolean array's parameter as one boolean.
          roles: checks.map((check) => (check.superadministrator ? 'superadministrator' : 'member')),
          organization: organizationId,
          organizationIds,
        })
        const answers: Array<AccessRow | undefined> = checks.map(() => undefined)
        for (const { ord, ...row } of rows) answers[ord - 1] = row
        return answers
      },
    },
  )
}
