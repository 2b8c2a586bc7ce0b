/**
 * What a project grant is: a member (a user) or a team link, each a kind described once (the
 * table, the principal, the list), with the statements built from that description. No service
 * here, so the face (api.ts) can give the members page's statement.
 */
import { sql, type SQL } from 'drizzle-orm'
import { parseListQuery, type ListShape } from '../../src/http/list-query'
import { composeListPage, pageWindow } from '../../src/sql'
import { compileStatement, type CompiledStatement } from '../../src/statements'

/** What differs between a member and a team link. */
export interface GrantKind {
  /** The grant table and its principal column. */
  table: 'project_members' | 'project_teams'
  column: 'user_id' | 'team_id'
  /** The body field and resource name (`userId`, `project_member`), the audit verbs' stem. */
  field: 'userId' | 'teamId'
  resourceType: 'project_member' | 'project_team'
  actions: { added: string; updated: string; removed: string }
  /** The webhook event type's stem (`project_member` → `project_member.created`…), for the kinds that have events. */
  events?: string
  notFound: string
  duplicate: string
  /** The principal's columns of a grant row `g` (a join on another plugin's read model). */
  principal: { columns: string; join: string; shape(row: Record<string, unknown>): Record<string, unknown> }
  /** The list of a project's grants of this kind, in creation order (its cursors continue it). */
  list: ListShape
}

/** A project's grants (`g`) in creation order, the principal's id last: the list of a kind. */
const grantList = (name: string, column: GrantKind['column']): ListShape => ({
  name,
  filters: {},
  sorts: { createdAt: { column: 'g.created_at', cast: 'timestamptz' } },
  defaultOrder: ['createdAt'],
  tiebreaker: { column: `g.${column}`, cast: 'uuid' },
})

export const MEMBER: GrantKind = {
  table: 'project_members',
  column: 'user_id',
  field: 'userId',
  resourceType: 'project_member',
  actions: { added: 'project.member_added', updated: 'project.member_updated', removed: 'project.member_removed' },
  events: 'project_member',
  notFound: 'No such project member.',
  duplicate: 'The user is already a member of this project.',
  principal: {
    columns: 'u.username, u.display_name as "displayName", u.avatar_url as "avatarUrl"',
    join: 'join user_directory u on u.id = g.user_id and u.organization_id = g.organization_id',
    shape: (row) => ({ user: { id: row.principalId, username: row.username, displayName: row.displayName, avatarUrl: row.avatarUrl } }),
  },
  list: grantList('project-members', 'user_id'),
}

export const TEAM: GrantKind = {
  table: 'project_teams',
  column: 'team_id',
  field: 'teamId',
  resourceType: 'project_team',
  actions: { added: 'project.team_linked', updated: 'project.team_updated', removed: 'project.team_unlinked' },
  notFound: 'No such team link.',
  duplicate: 'The team is already linked to this project.',
  principal: {
    columns: 't.name as "teamName"',
    join: 'join team_directory t on t.id = g.team_id and t.organization_id = g.organization_id',
    shape: (row) => ({ team: { id: row.principalId, name: row.teamName } }),
  },
  list: grantList('project-teams', 'team_id'),
}

/** A grant's columns with its principal's, and where they are read from (alias `g`). */
export const grantColumns = (kind: GrantKind) => `g.${kind.column} as "principalId", g.access_level as "accessLevel", g.created_at as "createdAt", ${kind.principal.columns}`
export const grantsFrom = (kind: GrantKind) => `${kind.table} g ${kind.principal.join}`
/** The grants of the organization's project (values, or placeholders). */
export const grantsOf = (project: unknown, organization: unknown) => sql`g.project_id = ${project} and g.organization_id = ${organization}`

/** $1 project, $2 organization, $3 principal: the one grant with its principal. */
export const grantOf = (kind: GrantKind) => `select ${grantColumns(kind)} from ${grantsFrom(kind)} where g.project_id = $1 and g.organization_id = $2 and g.${kind.column} = $3`

export const grantTotal = (kind: GrantKind, where: SQL) => sql`select count(*) from ${sql.raw(grantsFrom(kind))} where ${where}`

/**
 * A page by number of one project's grants of a kind, compiled once with the placeholders
 * `project`, `organization`, `limit` and `offset`: the statement `selectListPage` composes for
 * the list (its order is fixed: creation order), which the list runs for a page by number.
 */
const pageStatement = (kind: GrantKind): CompiledStatement => {
  const scope = grantsOf(sql.placeholder('project'), sql.placeholder('organization'))
  const { order } = parseListQuery(kind.list, {})
  const parts = { columns: grantColumns(kind), from: grantsFrom(kind), conditions: [scope], order, total: grantTotal(kind, scope) }
  return compileStatement(composeListPage(parts, sql.placeholder('limit'), sql.placeholder('offset')))
}

/** The page-by-number statement of each kind, by its table. */
export const GRANT_PAGES: Record<GrantKind['table'], CompiledStatement> = { project_members: pageStatement(MEMBER), project_teams: pageStatement(TEAM) }

/**
 * The members page (`size` members from page `page`) as the service reads it: its text, the
 * placeholder each `$n` takes in order (`project`, `organization`, `limit`, `offset`), and the
 * values of the page's own (`limit`, `offset`); the caller gives the project and organization.
 */
export function membersPageStatement(size: number, page: number): CompiledStatement & { values: { limit: number; offset: number } } {
  const { text, parameters } = GRANT_PAGES.project_members
  return { text, parameters: [...parameters], values: pageWindow({ size, page }) }
}
