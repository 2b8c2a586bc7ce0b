/**
 * Who may see and who may feed a page, written once as Drizzle SQL fragments for the statements
 * that need it (page lists and lookups, the display API's one-statement calls, live stream
 * re-checks). Team membership comes from the teams plugin's read model `team_memberships`. Every
 * table is read in the user's organization (`a.organization_id`): on Citus a statement whose `a`
 * carries the organization as a value then runs on that organization's shard alone.
 */
import { sql, type Placeholder, type SQL } from 'drizzle-orm'

type Operand = SQL | Placeholder

/** The calling user as the one-row `a` the conditions read, for a FROM list: the user, their organization and role given as values. */
export const actorRow = (user: Operand, organization: Operand, role: Operand): SQL =>
  sql`(select ${user}::uuid as user_id, ${organization}::uuid as organization_id, ${role}::text as role) a`

/** actorRow with the placeholders `user`, `organization` and `role`, bound by actorValues. */
export const ACTOR = actorRow(sql.placeholder('user'), sql.placeholder('organization'), sql.placeholder('role'))

/** ACTOR's values for an API v1 actor. */
export const actorValues = (actor: { userId: string; organizationId: string; role: string }) => ({ user: actor.userId, organization: actor.organizationId, role: actor.role })

/** An access-list entry `pa` that names the user `a` or one of their teams. */
const NAMES_USER = sql`(pa.principal_id = a.user_id or pa.principal_id in (select tm.team_id from team_memberships tm where tm.user_id = a.user_id and tm.organization_id = a.organization_id))`

/** Pages the user may see: creator, administrators, or the access list (user or team) at any level. Alias `p`, user `a`. */
export const MAY_USE_PAGE = sql`p.organization_id = a.organization_id and (
    a.role in ('administrator', 'superadministrator') or p.created_by = a.user_id
    or exists (select 1 from page_access pa where pa.page_id = p.id and pa.organization_id = a.organization_id and ${NAMES_USER}))`

/** Of the pages MAY_USE_PAGE admits, those the user may feed (display API): creator, administrators, or an `editor` entry. */
export const MAY_EDIT_PAGE = sql`(a.role in ('administrator', 'superadministrator') or p.created_by = a.user_id
    or exists (select 1 from page_access pa where pa.page_id = p.id and pa.organization_id = a.organization_id and pa.level = 'editor' and ${NAMES_USER}))`
