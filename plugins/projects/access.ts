/**
 * The project access service: the caller's effective level is the highest of their direct
 * membership and the levels of linked teams they belong to; a superadministrator is owner of
 * every project of the organization. The rule is written once, as SQL fragments (Drizzle `sql`
 * with named placeholders, access-rule.ts), composed into the statements that need it and
 * compiled once (src/statements.ts): the check is on nearly every request, so it runs as constant
 * SQL text, one query per check. Every table is matched on the caller's organization, a
 * parameter, so on Citus each statement is a router query on the organization's shard.
 */
import { sql, type SQL } from 'drizzle-orm'
import type { Database, Executor } from '../../src/db'
import { notFound } from '../../src/http/errors'
import { isUuid } from '../../src/ids'
import type { Actor } from '../../src/services/identity'
import { assertLevel, type AccessLevel, type ProjectAccessService, type ViewableProjects } from './api'
import { accessGroups, groupStatement, type AccessCheck, type AccessGroupOptions, type AccessGroups, type AccessRow, type LoneChecks } from './access-groups'
import { compileStatement, param, runStatement } from '../../src/statements'
import { checkStatement, levelOf, MEMBER_LEVEL, ORGANIZATION, PROJECT, USER } from './access-rule'

/**
 * The projects the caller can see, as a condition on the alias `p` with the caller's organization
 * and user bound: for list statements (a superadministrator sees every project of the
 * organization).
 */
export function visibleProjects(actor: Actor): SQL {
  const organization = sql`${actor.organizationId}`
  const inOrganization = sql`p.organization_id = ${organization}`
  return actor.role === 'superadministrator' ? inOrganization : sql`${inOrganization} and ${levelOf(sql`p.id`, organization, sql`${actor.userId}`)} is not null`
}

/** Those of the projects (`project`: an array of ids) the organization's user sees now, the role read from auth's user directory. */
const VISIBLE_TO_USER = compileStatement(sql`select p.id from projects p
  join user_directory u on u.id = ${USER} and u.organization_id = ${ORGANIZATION} and u.status = 'active'
  where p.organization_id = ${ORGANIZATION} and p.id = any(${PROJECT}::uuid[])
    and (u.role = 'superadministrator' or ${MEMBER_LEVEL} is not null)`)

/** The ids a viewable-projects statement keeps to (`among`). */
const AMONG = sql.placeholder('among')

/**
 * The projects a member views: their direct memberships and their teams' links, read from the
 * member's side (the indexes on user_id; then, team by team, the links of each of the member's
 * teams by team_id: `offset 0` keeps that lookup per team, so no plan reads the organization's
 * links and filters them), so the cost is the member's own rows, never the organization's.
 */
const memberProjects = (among: boolean) => {
  const only = (column: string) => (among ? sql` and ${sql.raw(column)} = any(${AMONG}::uuid[])` : sql``)
  return sql`select pm.project_id as id from project_members pm where pm.user_id = ${USER} and pm.organization_id = ${ORGANIZATION}${only('pm.project_id')}
    union
    select linked.project_id from team_memberships tm
      cross join lateral (select pt.project_id from project_teams pt where pt.team_id = tm.team_id and pt.organization_id = ${ORGANIZATION}${only('pt.project_id')} offset 0) linked
      where tm.user_id = ${USER} and tm.organization_id = ${ORGANIZATION}`
}

/** Every project of the organization (a superadministrator's view). */
const organizationProjects = (among: boolean) => sql`select p.id from projects p where p.organization_id = ${ORGANIZATION}${among ? sql` and p.id = any(${AMONG}::uuid[])` : sql``}`

/**
 * How many `projects` are, their ids (comma-separated, when `listed`), and the digest of which
 * they are with each one's list version (looked up per project), beside the organization's version.
 */
const viewableStatement = (projects: SQL, listed: boolean) =>
  compileStatement(sql`with viewable as (${projects}),
    versioned as (select viewable.id, (select v.version from change_versions v where v.scope_id = viewable.id and v.organization_id = ${ORGANIZATION}) as version from viewable)
  select count(*)::int as count, ${listed ? sql`coalesce(string_agg(versioned.id::text, ',' order by versioned.id), '') as ids, ` : sql``}
    left(encode(sha256(convert_to(coalesce(string_agg(versioned.id::text || ':' || coalesce(versioned.version, 0)::text, ',' order by versioned.id), ''), 'UTF8')), 'hex'), 32) as digest,
    (select o.version from change_versions o where o.scope_id = ${ORGANIZATION} and o.organization_id = ${ORGANIZATION}) as "organizationVersion"
  from versioned`)

/** The viewable-projects statements, by caller and by whether they keep to `among`; only a superadministrator's whole organization is not listed. */
const VIEWABLE = {
  member: { all: viewableStatement(memberProjects(false), true), among: viewableStatement(memberProjects(true), true) },
  superadministrator: { all: viewableStatement(organizationProjects(false), false), among: viewableStatement(organizationProjects(true), true) },
}

interface ViewableRow {
  count: number
  ids?: string
  digest: string
  organizationVersion: string | number | null
}

/** The projects the caller views (ProjectAccessService.viewableProjects), on the pool. */
async function viewableProjects(db: Database, actor: Actor, among?: readonly string[]): Promise<ViewableProjects> {
  const superadministrator = actor.role === 'superadministrator'
  const kept = among?.filter(isUuid)
  const statement = VIEWABLE[superadministrator ? 'superadministrator' : 'member'][kept ? 'among' : 'all']
  const [row] = await runStatement<ViewableRow>(db, statement, { organization: actor.organizationId, user: actor.userId, among: kept ?? [] })
  const { count, ids, digest, organizationVersion } = row!
  const version = `${digest}.${organizationVersion ?? 0}`
  if (ids === undefined) return { count, version, ids: sql`select p.id from projects p where p.organization_id = ${param(actor.organizationId)}` }
  return { count, version, ids: sql`select unnest(${param(ids ? ids.split(',') : [])}::uuid[]) as id` }
}

/** The grouped checks' statements (access-groups.ts), with the member's level as written above. */
const GROUP_ACCESS = { organization: groupStatement('organization', levelOf), checks: groupStatement('checks', levelOf) }

/** A check's own statement, on `executor` (the pool, or the caller's transaction). */
async function checkAlone(executor: Executor, check: AccessCheck, versions: boolean): Promise<AccessRow | undefined> {
  const [row] = await runStatement<AccessRow>(executor, checkStatement(check.superadministrator, versions), { project: check.projectId, organization: check.organizationId, user: check.userId })
  return row
}

/** Each check its own statement on the pool. */
export const loneChecks = (db: Database): LoneChecks => ({ run: (check, versions) => checkAlone(db, check, versions) })

/** Checks on the pool: grouped while statements are in flight, else each alone. */
export function createAccessGroups(db: Database, options: AccessGroupOptions): AccessGroups {
  return accessGroups(db, options, loneChecks(db), GROUP_ACCESS)
}

export function createProjectAccess(db: Database, groups = createAccessGroups(db, { enabled: false, maxChecks: 1, concurrency: 1 })): ProjectAccessService {
  /** The project's row and the caller's level; 404 when unknown, elsewhere or invisible. */
  const check = async (actor: Actor, projectId: string, executor: Executor, versions: boolean): Promise<AccessRow & { level: AccessLevel }> => {
    if (!isUuid(projectId)) throw notFound('No such project.')
    const input = { projectId, organizationId: actor.organizationId, userId: actor.userId, superadministrator: actor.role === 'superadministrator', versions }
    const row = executor === db ? await groups.run(input, input.organizationId) : await checkAlone(executor, input, versions)
    if (!row || !row.level) throw notFound('No such project.')
    return row as AccessRow & { level: AccessLevel }
  }
  return {
    visibleProjects: (actor) => sql`select p.id from projects p where ${visibleProjects(actor)}`,
    viewerCondition: (organization, project, user) =>
      sql`exists (select 1 from user_directory vu where vu.id = ${user} and vu.organization_id = ${organization} and vu.status = 'active'
        and (vu.role = 'superadministrator' or ${levelOf(project, organization, user)} is not null))`,
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
    viewableProjects: (actor, among) => viewableProjects(db, actor, among),
    async listAccess(actor, projectId, required = 'viewer') {
      const row = await check(actor, projectId, db, true)
      const access = { projectId: row.id, organizationId: row.organizationId, level: row.level, version: `${row.projectVersion ?? 0}.${row.organizationVersion ?? 0}` }
      assertLevel(access, required)
      return access
    },
  }
}
