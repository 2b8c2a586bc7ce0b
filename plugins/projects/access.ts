/**
 * The project access service: the caller's effective level is the highest of their direct
 * membership and the levels of linked teams they belong to; a superadministrator is owner of
 * every project of the organization. The rule is written once, as SQL fragments (Drizzle `sql`
 * with named placeholders), composed into the statements that need it and compiled once
 * (src/statements.ts): the check is on nearly every request, so it runs as constant SQL text, one
 * query per check. Every table is matched on the caller's organization, a parameter, so on Citus
 * each statement is a router query on the organization's shard.
 */
import { sql, type Placeholder, type SQL } from 'drizzle-orm'
import type { Database, Executor } from '../../src/db'
import { notFound } from '../../src/http/errors'
import { isUuid } from '../../src/ids'
import type { Actor } from '../../src/services/identity'
import { assertLevel, type AccessLevel, type ProjectAccessService } from './api'
import { AccessGroups, groupStatement, type AccessCheck, type AccessGroupOptions, type AccessRow, type LoneChecks } from './access-groups'
import { compileStatement, runStatement, textOf } from '../../src/statements'

/** The caller's values every access statement is given. */
const PROJECT = sql.placeholder('project')
const ORGANIZATION = sql.placeholder('organization')
const USER = sql.placeholder('user')

type Operand = SQL | Placeholder

/** The level on `project` (a column or a parameter) of `user` in `organization` (null: none). */
const levelOf = (project: Operand, organization: Operand, user: Operand): SQL => sql`greatest(
    (select pm.access_level from project_members pm where pm.project_id = ${project} and pm.user_id = ${user} and pm.organization_id = ${organization}),
    (select max(pt.access_level) from project_teams pt
      join team_memberships tm on tm.team_id = pt.team_id and tm.user_id = ${user} and tm.organization_id = ${organization}
      where pt.project_id = ${project} and pt.organization_id = ${organization}))`

const MEMBER_LEVEL = levelOf(sql`p.id`, ORGANIZATION, USER)
const OWNER_LEVEL = sql`'owner'::access_level`

/**
 * The versions a cached list page of the project is keyed on, read in the access check's
 * statement: the project's and its organization's (see src/http/list-cache.ts).
 */
const VERSIONS = [
  sql`(select v.version from change_versions v where v.scope_id = p.id and v.organization_id = ${ORGANIZATION}) as "projectVersion"`,
  sql`(select v.version from change_versions v where v.scope_id = ${ORGANIZATION} and v.organization_id = ${ORGANIZATION}) as "organizationVersion"`,
]

/** The project's row and the caller's `level` on it, with the list versions when `versions`. */
const accessCheck = (level: SQL, versions: boolean) =>
  compileStatement(sql`select ${sql.join([sql`p.id`, sql`p.organization_id as "organizationId"`, sql`${level} as level`, ...(versions ? VERSIONS : [])], sql`, `)}
  from projects p where p.id = ${PROJECT} and p.organization_id = ${ORGANIZATION}`)

/** The member's check: exported for the benchmarks, which run it under pgbench. */
export const MEMBER_ACCESS = accessCheck(MEMBER_LEVEL, false)
const SUPERADMINISTRATOR_ACCESS = accessCheck(OWNER_LEVEL, false)
/** The member's list check (with the versions): exported for the benchmarks too. */
export const MEMBER_LIST_ACCESS = accessCheck(MEMBER_LEVEL, true)
const SUPERADMINISTRATOR_LIST_ACCESS = accessCheck(OWNER_LEVEL, true)

/**
 * The projects a caller can see, as a condition on the alias `p` with the placeholders
 * `organization` and `user`: for list statements (a superadministrator sees every project of the
 * organization).
 */
export function visibleProjects(superadministrator: boolean): SQL {
  const organization = sql`p.organization_id = ${ORGANIZATION}`
  return superadministrator ? organization : sql`${organization} and ${MEMBER_LEVEL} is not null`
}

/**
 * The same condition as SQL text with its parameters numbered from `$first`, for the face's
 * `visibleProjectIds` (other plugins' list statements written as text).
 */
function visibleProjectsText(actor: Actor, first: number): { where: string; parameters: string[] } {
  const organization = sql.raw(`$${first}`)
  const where = sql`p.organization_id = ${organization}`
  if (actor.role === 'superadministrator') return { where: textOf(where), parameters: [actor.organizationId] }
  return { where: textOf(sql`${where} and ${levelOf(sql`p.id`, organization, sql.raw(`$${first + 1}`))} is not null`), parameters: [actor.organizationId, actor.userId] }
}

/** Those of the projects (`project`: an array of ids) the organization's user sees now, the role read from auth's user directory. */
const VISIBLE_TO_USER = compileStatement(sql`select p.id from projects p
  join user_directory u on u.id = ${USER} and u.organization_id = ${ORGANIZATION} and u.status = 'active'
  where p.organization_id = ${ORGANIZATION} and p.id = any(${PROJECT}::uuid[])
    and (u.role = 'superadministrator' or ${MEMBER_LEVEL} is not null)`)

/** The grouped checks' statements (access-groups.ts), with the member's level as written above. */
const GROUP_ACCESS = { organization: groupStatement('organization', levelOf), checks: groupStatement('checks', levelOf) }

/** A check's own statement, on `executor` (the pool, or the caller's transaction). */
async function checkAlone(executor: Executor, check: AccessCheck, versions: boolean): Promise<AccessRow | undefined> {
  const statement = check.superadministrator ? (versions ? SUPERADMINISTRATOR_LIST_ACCESS : SUPERADMINISTRATOR_ACCESS) : versions ? MEMBER_LIST_ACCESS : MEMBER_ACCESS
  const [row] = await runStatement<AccessRow>(executor, statement, { project: check.projectId, organization: check.organizationId, user: check.userId })
  return row
}

/** Each check its own statement on the pool. */
export const loneChecks = (db: Database): LoneChecks => ({ run: (check, versions) => checkAlone(db, check, versions) })

/** Checks on the pool: grouped while statements are in flight, else each alone. */
export function createAccessGroups(db: Database, options: AccessGroupOptions): AccessGroups {
  return new AccessGroups(db, options, loneChecks(db), GROUP_ACCESS)
}

export function createProjectAccess(db: Database, groups = createAccessGroups(db, { enabled: false, maxChecks: 1, concurrency: 1 })): ProjectAccessService {
  /** The project's row and the caller's level; 404 when unknown, elsewhere or invisible. */
  const check = async (actor: Actor, projectId: string, executor: Executor, versions: boolean): Promise<AccessRow & { level: AccessLevel }> => {
    if (!isUuid(projectId)) throw notFound('No such project.')
    const input = { projectId, organizationId: actor.organizationId, userId: actor.userId, superadministrator: actor.role === 'superadministrator' }
    const row = executor === db ? await groups.run(input, versions) : await checkAlone(executor, input, versions)
    if (!row || !row.level) throw notFound('No such project.')
    return row as AccessRow & { level: AccessLevel }
  }
  return {
    visibleProjectIds(actor, first) {
      const { where, parameters } = visibleProjectsText(actor, first)
      return { sql: `select p.id from projects p where ${where}`, parameters }
    },
    async requireProjectAccess(actor, projectId, required, executor: Executor = db) {
      const row = await check(actor, projectId, executor, false)
      const access = { projectId: row.id, organizationId: row.organizationId, level: row.level }
      assertLevel(access, required)
      return access
    },
    async projectsVisibleTo(executor, organizationId, userId, projectIds) {
      const ids = projectIds.filter(isUuid)
      if (!ids.length || !isUuid(userId)) return new Set()
      const rows = await runStatement<{ id: string }>(executor, VISIBLE_TO_USER, { project: ids, organization: organizationId, user: userId })
      return new Set(rows.map((row) => row.id))
    },
    async listAccess(actor, projectId, required = 'viewer') {
      const row = await check(actor, projectId, db, true)
      const access = { projectId: row.id, organizationId: row.organizationId, level: row.level, version: `${row.projectVersion ?? 0}.${row.organizationVersion ?? 0}` }
      assertLevel(access, required)
      return access
    },
  }
}
