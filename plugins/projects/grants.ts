/**
 * Who may open a project: direct members and linked teams, each with a level. Reads need viewer
 * access, changes need owner access, and a project always keeps an owner grant (a direct owner
 * or a team linked as owner): removing or demoting the last one is 409. Members and team links
 * are one kind of thing, a grant to a principal, written once and described twice (grant-kinds.ts).
 */
import { sql } from 'drizzle-orm'
import { queryRows, queryText, type Database, type Executor, type Transaction } from '../../src/db'
import { created } from '../../src/http/answer'
import { conflict, notFound, requireReference } from '../../src/http/errors'
import type { IdempotentRequest } from '../../src/http/idempotency'
import type { ListCache } from '../../src/http/list-cache'
import { listIdentity, parseListQuery, readCursor } from '../../src/http/list-query'
import type { PageRequest } from '../../src/http/pagination'
import { isUuid } from '../../src/ids'
import { userOf } from '../../src/http/models'
import type { Actor } from '../../src/services/identity'
import { isoFromText, selectListPage } from '../../src/sql'
import { runStatement } from '../../src/statements'
import type { Write, Writes } from '../../src/writes'
import type { UserDirectory } from '../auth/api'
import type { TeamDirectory } from '../teams/api'
import type { AccessLevel, ProjectAccessService } from './api'
import { GRANT_PAGES, grantColumns, grantOf, grantsFrom, grantsOf, grantTotal, MEMBER, TEAM, type GrantKind } from './grant-kinds'
import { projectMembers, projectTeams } from './schema'
import { lockProject } from './service'

/** A grant as its statements read it (grantColumns). */
export interface GrantRow {
  principalId: string
  accessLevel: AccessLevel
  createdAt: string
  [column: string]: unknown
}

/** A grant as API v1 shows it. */
export const serializeGrant = (kind: GrantKind, row: GrantRow) => ({
  [kind.field]: row.principalId,
  accessLevel: row.accessLevel,
  ...kind.principal.shape(row),
  createdAt: isoFromText(row.createdAt),
})

async function grantRow(executor: Executor, kind: GrantKind, organizationId: string, projectId: string, principalId: string): Promise<GrantRow | undefined> {
  if (!isUuid(principalId)) return undefined
  return (await queryText<GrantRow>(executor, grantOf(kind), [projectId, organizationId, principalId]))[0]
}

/** Throws 409 when the grant being removed or demoted is the project's last owner grant. */
async function keepAnOwner(tx: Transaction, organizationId: string, projectId: string, losing: AccessLevel, becoming: AccessLevel | null) {
  if (losing !== 'owner' || becoming === 'owner') return
  const [row] = await queryRows<{ owners: number }>(
    tx,
    sql`select
      (select count(*) from ${projectMembers} where ${projectMembers.projectId} = ${projectId} and ${projectMembers.organizationId} = ${organizationId} and ${projectMembers.accessLevel} = 'owner')
    + (select count(*) from ${projectTeams} where ${projectTeams.projectId} = ${projectId} and ${projectTeams.organizationId} = ${organizationId} and ${projectTeams.accessLevel} = 'owner') as owners`,
  )
  if (Number(row!.owners) <= 1) throw conflict('A project must keep at least one owner; add another owner first.')
}

export interface GrantDeps {
  db: Database
  writes: Writes
  lists: ListCache
  access: ProjectAccessService
  users: UserDirectory
  teams: TeamDirectory
}

/** Members and team links of projects, bound once. */
export function createGrants({ db, writes, lists, access, users, teams }: GrantDeps) {
  /** Records the grant's event, if its kind has events (members do, team links do not). */
  const record = (emit: Write['emit'], kind: GrantKind, verb: 'created' | 'updated' | 'deleted', projectId: string, data: unknown, previous?: Record<string, unknown>) =>
    kind.events ? emit({ type: `${kind.events}.${verb}`, projectId, data, previous }) : Promise.resolve()
  /** Checks owner access and locks the project row, so grant changes on one project queue up. */
  const lockAsOwner = async (tx: Transaction, actor: Actor, projectId: string) => {
    await access.requireProjectAccess(actor, projectId, 'owner', tx)
    await lockProject(tx, actor.organizationId, projectId)
  }
  /** 400 naming the field unless the principal is an active user / a team of the organization. */
  const requirePrincipal: Record<GrantKind['field'], (tx: Transaction, actor: Actor, id: string) => Promise<void>> = {
    userId: async (tx, actor, id) => void (await users.requireActiveUser(tx, actor.organizationId, id, 'userId')),
    teamId: async (tx, actor, id) => void requireReference(await teams.find(tx, actor.organizationId, id), 'teamId', 'No team with this id in your organization.'),
  }

  /**
   * A project's grants of a kind in creation order, by page or cursor (a cursor is checked before
   * the access check, as work items do). A page by number runs the kind's statement compiled once
   * (grant-kinds.ts GRANT_PAGES).
   */
  const list = async (kind: GrantKind, actor: Actor, projectId: string, request: PageRequest) => {
    const query = parseListQuery(kind.list, {})
    const identity = listIdentity(kind.list, `${actor.organizationId} ${projectId}`, query)
    const after = readCursor(request, identity, query.order)
    const { version } = await access.listAccess(actor, projectId)
    const scope = grantsOf(projectId, actor.organizationId)
    return lists.page(`${kind.table} ${projectId} ${request.cursor ?? request.page} ${request.size}`, version, () =>
      selectListPage<GrantRow, ReturnType<typeof serializeGrant>>(
        db,
        { columns: grantColumns(kind), from: grantsFrom(kind), conditions: [scope], order: query.order, total: grantTotal(kind, scope), identity, after },
        request,
        (row) => serializeGrant(kind, row),
        (window) => runStatement(db, GRANT_PAGES[kind.table], { project: projectId, organization: actor.organizationId, ...window }),
      ),
    )
  }

  /** Grants `principalId` (for a member, `me`: the caller) `accessLevel` on the project. */
  const add = (kind: GrantKind, actor: Actor, projectId: string, given: string, accessLevel: AccessLevel, request?: IdempotentRequest) => {
    const principalId = kind.field === 'userId' ? userOf(actor, given) : given
    return writes.change(actor, 'project', async ({ tx, audit, emit }) => {
      await lockAsOwner(tx, actor, projectId)
      await requirePrincipal[kind.field](tx, actor, principalId)
      const inserted = await queryText(
        tx,
        `insert into ${kind.table} (project_id, ${kind.column}, organization_id, access_level) values ($1, $2, $3, $4) on conflict do nothing returning 1`,
        [projectId, principalId, actor.organizationId, accessLevel],
      )
      if (!inserted.length) throw conflict(kind.duplicate, principalId, kind.field)
      await audit({ action: kind.actions.added, resourceType: kind.resourceType, resourceId: principalId, projectId, changes: { after: { [kind.field]: principalId, accessLevel } } })
      const added = serializeGrant(kind, (await grantRow(tx, kind, actor.organizationId, projectId, principalId))!)
      await record(emit, kind, 'created', projectId, added)
      return created(added)
    }, request)
  }

  const update = (kind: GrantKind, actor: Actor, projectId: string, principalId: string, accessLevel: AccessLevel) =>
    writes.change(actor, 'project', async ({ tx, audit, emit }) => {
      await lockAsOwner(tx, actor, projectId)
      const current = await grantRow(tx, kind, actor.organizationId, projectId, principalId)
      if (!current) throw notFound(kind.notFound)
      if (current.accessLevel === accessLevel) return serializeGrant(kind, current)
      await keepAnOwner(tx, actor.organizationId, projectId, current.accessLevel, accessLevel)
      await queryText(tx, `update ${kind.table} set access_level = $3, updated_at = now() where project_id = $1 and ${kind.column} = $2 and organization_id = $4`, [
        projectId,
        principalId,
        accessLevel,
        actor.organizationId,
      ])
      await audit({
        action: kind.actions.updated,
        resourceType: kind.resourceType,
        resourceId: principalId,
        projectId,
        changes: { before: { [kind.field]: principalId, accessLevel: current.accessLevel }, after: { [kind.field]: principalId, accessLevel } },
      })
      const updated = serializeGrant(kind, { ...current, accessLevel })
      await record(emit, kind, 'updated', projectId, updated, { accessLevel: current.accessLevel })
      return updated
    })

  const remove = (kind: GrantKind, actor: Actor, projectId: string, principalId: string) =>
    writes.change(actor, 'project', async ({ tx, audit, emit }) => {
      await lockAsOwner(tx, actor, projectId)
      const current = await grantRow(tx, kind, actor.organizationId, projectId, principalId)
      if (!current) throw notFound(kind.notFound)
      await keepAnOwner(tx, actor.organizationId, projectId, current.accessLevel, null)
      await queryText(tx, `delete from ${kind.table} where project_id = $1 and ${kind.column} = $2 and organization_id = $3`, [projectId, principalId, actor.organizationId])
      await audit({ action: kind.actions.removed, resourceType: kind.resourceType, resourceId: principalId, projectId, changes: { before: { [kind.field]: principalId, accessLevel: current.accessLevel } } })
      await record(emit, kind, 'deleted', projectId, serializeGrant(kind, current))
      return { id: principalId }
    })

  const grantsOfKind = (kind: GrantKind) => ({
    list: (actor: Actor, projectId: string, request: PageRequest) => list(kind, actor, projectId, request),
    add: (actor: Actor, projectId: string, principalId: string, accessLevel: AccessLevel, request?: IdempotentRequest) => add(kind, actor, projectId, principalId, accessLevel, request),
    update: (actor: Actor, projectId: string, principalId: string, accessLevel: AccessLevel) => update(kind, actor, projectId, principalId, accessLevel),
    remove: (actor: Actor, projectId: string, principalId: string) => remove(kind, actor, projectId, principalId),
  })
  return { members: grantsOfKind(MEMBER), teams: grantsOfKind(TEAM) }
}

export type GrantService = ReturnType<typeof createGrants>
