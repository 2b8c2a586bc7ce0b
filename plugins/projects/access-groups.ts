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
 * organizations' checks. A group statement that fails answers no caller with its error: its
 * checks run again one by one.
 */
import { sql, type SQL } from 'drizzle-orm'
import { citusKnown } from '../../src/citus'
import type { Database } from '../../src/db'
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

interface Waiting {
  check: AccessCheck
  resolve(row: AccessRow | undefined): void
  reject(error: unknown): void
}

/** The per-instance line of access checks run on the pool (a check inside a transaction runs there, alone). */
export class AccessGroups {
  private readonly waiting: Waiting[] = []
  private running = 0
  /** Statements run and checks they carried, for the tests and the benchmarks. */
  readonly stats = { statements: 0, checks: 0, grouped: 0, retried: 0 }
  /** Whether a group may hold several organizations' checks: not on Citus, nor until the database is known. */
  private spanning = false

  constructor(
    private readonly db: Database,
    private readonly options: AccessGroupOptions,
    private readonly lone: LoneChecks,
    private readonly statements: { organization: CompiledStatement; checks: CompiledStatement },
  ) {
    const known = citusKnown(db)
    if (typeof known === 'boolean') this.spanning = !known
    else void known.then((citus) => (this.spanning = !citus))
  }

  /** The caller's row (undefined: no such project in its organization), as its own statement would read it. */
  run(check: AccessCheck, versions: boolean): Promise<AccessRow | undefined> {
    if (!this.options.enabled || (this.running < this.options.concurrency && !this.waiting.length)) return this.counted(this.alone(check, versions))
    return new Promise((resolve, reject) => {
      this.waiting.push({ check, resolve, reject })
      this.next()
    })
  }

  /** Runs `work` as one of the statements in flight; when it settles, starts the groups waiting. */
  private counted<T>(work: Promise<T>): Promise<T> {
    this.running++
    const settle = () => {
      this.running--
      this.next()
    }
    work.then(settle, settle)
    return work
  }

  private alone(check: AccessCheck, versions: boolean): Promise<AccessRow | undefined> {
    this.stats.statements++
    this.stats.checks++
    return this.lone.run(check, versions)
  }

  /** Starts groups while there is room: the checks in line in arrival order, of the first one's organization unless a group may span them. */
  private next(): void {
    while (this.running < this.options.concurrency && this.waiting.length) {
      const organizationId = this.waiting[0]!.check.organizationId
      const group: Waiting[] = []
      const rest: Waiting[] = []
      for (const waiting of this.waiting)
        (group.length < this.options.maxChecks && (this.spanning || waiting.check.organizationId === organizationId) ? group : rest).push(waiting)
      this.waiting.splice(0, this.waiting.length, ...rest)
      void this.counted(this.dispatch(group))
    }
  }

  private async dispatch(group: Waiting[]): Promise<void> {
    if (group.length === 1) {
      const [only] = group as [Waiting]
      // Versions always: a caller waiting in line may be a list's, and reading them costs two index probes.
      return this.alone(only.check, true).then(only.resolve, only.reject)
    }
    try {
      const rows = await this.together(group.map((waiting) => waiting.check))
      group.forEach((waiting, i) => waiting.resolve(rows[i]))
    } catch {
      this.stats.retried += group.length
      await Promise.all(group.map((waiting) => this.alone(waiting.check, true).then(waiting.resolve, waiting.reject)))
    }
  }

  /** One statement for the checks: the organization's when they are of one, else the spanning one. */
  private async together(checks: AccessCheck[]): Promise<Array<AccessRow | undefined>> {
    this.stats.statements++
    this.stats.checks += checks.length
    this.stats.grouped += checks.length
    const organizations = checks.map((check) => check.organizationId)
    const one = organizations.every((organizationId) => organizationId === organizations[0])
    const rows = await runStatement<AccessRow & { ord: number }>(this.db, one ? this.statements.organization : this.statements.checks, {
      projectIds: checks.map((check) => check.projectId),
      userIds: checks.map((check) => check.userId),
      // As text: postgres.js would type a boolean array's parameter as one boolean.
      roles: checks.map((check) => (check.superadministrator ? 'superadministrator' : 'member')),
      organization: organizations[0],
      organizationIds: organizations,
    })
    const answers: Array<AccessRow | undefined> = checks.map(() => undefined)
    for (const { ord, ...row } of rows) answers[ord - 1] = row
    return answers
  }
}
