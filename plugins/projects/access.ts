/**
 * The project access service: the caller's effective level is the highest of their direct
 * membership and the levels of linked teams they belong to; a superadministrator is owner of
 * every project of the organization. The rule is written once, as a SQL expression, and runs as
 * constant SQL text (it is on nearly every request): one query per check.
 */
import { queryText, type Database, type Executor } from '../../src/db'
import { notFound } from '../../src/http/errors'
import { isUuid } from '../../src/ids'
import { assertLevel, type AccessLevel, type ProjectAccessService } from './api'
import type { Actor } from '../../src/services/identity'

/**
 * The level on the project whose id is `project` of the user in parameter `user` (null: none).
 * Every table is matched on the project's organization too, so on Citus the check stays on the
 * organization's shard.
 */
const levelExpression = (project: string, user: string, organization = 'p.organization_id') => `greatest(
    (select pm.access_level from project_members pm where pm.project_id = ${project} and pm.user_id = ${user} and pm.organization_id = ${organization}),
    (select max(pt.access_level) from project_teams pt
      join team_memberships tm on tm.team_id = pt.team_id and tm.user_id = ${user} and tm.organization_id = pt.organization_id
      where pt.project_id = ${project} and pt.organization_id = ${organization}))`

/** $1 project, $2 organization, $3 user. Exported for the benchmarks, which run it under pgbench. */
export const MEMBER_ACCESS = `select p.id, p.organization_id as "organizationId", ${levelExpression('p.id', '$3')} as level
  from projects p where p.id = $1 and p.organization_id = $2`
const SUPERADMINISTRATOR_ACCESS = `select p.id, p.organization_id as "organizationId", 'owner'::access_level as level
  from projects p where p.id = $1 and p.organization_id = $2`

/**
 * The versions a cached list page of the project is keyed on, read in the access check's
 * statement: the project's and its organization's (see src/http/list-cache.ts).
 */
const VERSIONS = `(select v.version from change_versions v where v.scope_id = p.id and v.organization_id = p.organization_id) as "projectVersion",
  (select v.version from change_versions v where v.scope_id = p.organization_id and v.organization_id = p.organization_id) as "organizationVersion"`
const withVersions = (check: string) => {
  const text = check.replace(' as level\n', ` as level, ${VERSIONS}\n`)
  if (text === check) throw new Error('the access check no longer ends its select list with "as level"')
  return text
}
const MEMBER_LIST_ACCESS = withVersions(MEMBER_ACCESS)
const SUPERADMINISTRATOR_LIST_ACCESS = withVersions(SUPERADMINISTRATOR_ACCESS)

/**
 * The projects the actor can see, as a `where` condition on the alias `p` with its parameters
 * (numbered from `$first`), for list statements of this and other plugins.
 */
export function visibleProjectsCondition(actor: Actor, first = 1): { where: string; parameters: string[] } {
  const organization = `$${first}`
  if (actor.role === 'superadministrator') return { where: `p.organization_id = ${organization}`, parameters: [actor.organizationId] }
  return { where: `p.organization_id = ${organization} and ${levelExpression('p.id', `$${first + 1}`)} is not null`, parameters: [actor.organizationId, actor.userId] }
}

interface AccessRow {
  id: string
  organizationId: string
  level: AccessLevel
  projectVersion?: string | number | null
  organizationVersion?: string | number | null
}

/** $1 organization, $2 user, $3 project ids: those the user sees, the role read from auth's user directory. */
const VISIBLE_TO_USER = `select p.id from projects p
  join user_directory u on u.id = $2 and u.organization_id = p.organization_id and u.status = 'active'
  where p.organization_id = $1 and p.id = any($3::uuid[])
    and (u.role = 'superadministrator' or ${levelExpression('p.id', '$2')} is not null)`

export function createProjectAccess(db: Database): ProjectAccessService {
  /** The project's row and the caller's level; 404 when unknown, elsewhere or invisible. */
  const check = async (actor: Actor, projectId: string, executor: Executor, versions: boolean): Promise<AccessRow> => {
    if (!isUuid(projectId)) throw notFound('No such project.')
    const superadministrator = actor.role === 'superadministrator'
    const [row] = await queryText<Omit<AccessRow, 'level'> & { level: AccessLevel | null }>(
      executor,
      superadministrator ? (versions ? SUPERADMINISTRATOR_LIST_ACCESS : SUPERADMINISTRATOR_ACCESS) : versions ? MEMBER_LIST_ACCESS : MEMBER_ACCESS,
      superadministrator ? [projectId, actor.organizationId] : [projectId, actor.organizationId, actor.userId],
    )
    if (!row || !row.level) throw notFound('No such project.')
    return row as AccessRow
  }
  return {
    visibleProjectIds(actor, first) {
      const { where, parameters } = visibleProjectsCondition(actor, first)
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
      const rows = await queryText<{ id: string }>(executor, VISIBLE_TO_USER, [organizationId, userId, ids])
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
