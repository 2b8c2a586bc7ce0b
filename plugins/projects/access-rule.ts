/**
 * The access rule as SQL: the caller's level on a project (the highest of their direct membership
 * and the levels of linked teams they belong to), written once as Drizzle fragments with named
 * placeholders, and the check statements compiled from it once (src/statements.ts). access.ts runs
 * them and composes the rest of the plugin's access statements from the same fragments; the face
 * (api.ts) gives the member's check. Nothing here imports the face, so the face can import it.
 */
import { sql, type Placeholder, type SQL } from 'drizzle-orm'
import { compileStatement, type CompiledStatement } from '../../src/statements'

/** The caller's values every access statement is given. */
export const PROJECT = sql.placeholder('project')
export const ORGANIZATION = sql.placeholder('organization')
export const USER = sql.placeholder('user')

type Operand = SQL | Placeholder

/** The level on `project` (a column or a parameter) of `user` in `organization` (null: none). */
export const levelOf = (project: Operand, organization: Operand, user: Operand): SQL => sql`greatest(
    (select pm.access_level from project_members pm where pm.project_id = ${project} and pm.user_id = ${user} and pm.organization_id = ${organization}),
    (select max(pt.access_level) from project_teams pt
      join team_memberships tm on tm.team_id = pt.team_id and tm.user_id = ${user} and tm.organization_id = ${organization}
      where pt.project_id = ${project} and pt.organization_id = ${organization}))`

/** A member's level on the project `p` (a superadministrator's is owner of every project). */
export const MEMBER_LEVEL = levelOf(sql`p.id`, ORGANIZATION, USER)
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

/** The check statements, by caller and by read (`list`: with the list versions). */
const CHECKS = {
  member: { single: accessCheck(MEMBER_LEVEL, false), list: accessCheck(MEMBER_LEVEL, true) },
  superadministrator: { single: accessCheck(OWNER_LEVEL, false), list: accessCheck(OWNER_LEVEL, true) },
}

/** The check statement of a caller (a superadministrator's, or a member's), with the list versions when `versions`. */
export const checkStatement = (superadministrator: boolean, versions: boolean): CompiledStatement => CHECKS[superadministrator ? 'superadministrator' : 'member'][versions ? 'list' : 'single']

/**
 * The member's access check as the service runs it (`versions`: the list check, with the list
 * versions): its text and the placeholder each `$n` takes, in order (`project`, `organization`,
 * `user`).
 */
export function accessCheckStatement({ versions }: { versions: boolean }): CompiledStatement {
  const { text, parameters } = checkStatement(false, versions)
  return { text, parameters: [...parameters] }
}
