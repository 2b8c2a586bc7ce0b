/**
 * The project access service: the caller's effective level is the highest of their direct
 * membership and the levels of linked teams they belong to; a superadministrator is owner of
 * every project of the organization. One query per check.
 */
import { sql, type SQL } from 'drizzle-orm'
import { queryText, type Database, type Executor } from '../../src/db'
import { forbidden, notFound } from '../../src/http/errors'
import { isUuid } from '../../src/ids'
import { levelRank, type AccessLevel, type ProjectAccessService } from '../../src/services/access'
import type { Actor } from '../../src/services/auth'

/**
 * SQL of the caller's level on the project whose id is `projectId` (null: no access). Names are
 * written out and aliased: inside a select list Drizzle renders columns unqualified.
 */
export function levelOf(actor: Actor, projectId: SQL): SQL<AccessLevel | null> {
  if (actor.role === 'superadministrator') return sql<AccessLevel>`'owner'::access_level`
  return sql<AccessLevel | null>`greatest(
    (select access_pm.access_level from project_members access_pm
      where access_pm.project_id = ${projectId} and access_pm.user_id = ${actor.userId}),
    (select max(access_pt.access_level) from project_teams access_pt
      join team_members access_tm on access_tm.team_id = access_pt.team_id and access_tm.user_id = ${actor.userId}
      where access_pt.project_id = ${projectId}))`
}

/** The access check, as text (it runs on nearly every request). $1 project, $2 organization, $3 user. */
const MEMBER_ACCESS = `select p.id, p.organization_id as "organizationId", greatest(
    (select pm.access_level from project_members pm where pm.project_id = p.id and pm.user_id = $3),
    (select max(pt.access_level) from project_teams pt
      join team_members tm on tm.team_id = pt.team_id and tm.user_id = $3
      where pt.project_id = p.id)) as level
  from projects p where p.id = $1 and p.organization_id = $2`
const SUPERADMINISTRATOR_ACCESS = `select p.id, p.organization_id as "organizationId", 'owner'::access_level as level
  from projects p where p.id = $1 and p.organization_id = $2`

/** `projects.id`, qualified, for use inside `levelOf`. */
export const PROJECT_ID = sql.raw('"projects"."id"')

const REQUIRED_MESSAGE: Record<AccessLevel, string> = {
  viewer: 'This needs viewer access to the project.',
  editor: 'This needs editor access to the project.',
  owner: 'This needs owner access to the project.',
}

export function createProjectAccess(db: Database): ProjectAccessService {
  return {
    async requireProjectAccess(actor, projectId, required, executor: Executor = db) {
      if (!isUuid(projectId)) throw notFound('No such project.')
      const superadministrator = actor.role === 'superadministrator'
      const [row] = await queryText<{ id: string; organizationId: string; level: AccessLevel | null }>(
        executor,
        superadministrator ? SUPERADMINISTRATOR_ACCESS : MEMBER_ACCESS,
        superadministrator ? [projectId, actor.organizationId] : [projectId, actor.organizationId, actor.userId],
      )
      if (!row || !row.level) throw notFound('No such project.')
      if (levelRank(row.level) < levelRank(required)) throw forbidden(REQUIRED_MESSAGE[required])
      return { projectId: row.id, organizationId: row.organizationId, level: row.level }
    },
    visibleProjectCondition(actor, projectIdColumn) {
      if (actor.role === 'superadministrator') return sql`true`
      return sql`(${levelOf(actor, projectIdColumn)}) is not null`
    },
  }
}
