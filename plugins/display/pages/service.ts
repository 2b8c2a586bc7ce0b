/**
 * Dashboard pages, their access lists and components, managed through API v1. A page is seen by
 * its creator, the organization's administrators and its access list (users, and members of
 * teams on it); it is managed by its creator and the administrators.
 */
import { and, eq, ne, sql, type SQL } from 'drizzle-orm'
import { changedFields } from '../../../src/audit'
import { notify, queryText, type Database, type Executor } from '../../../src/db'
import { created } from '../../../src/http/answer'
import { badRequest, conflict, forbidden, notFound } from '../../../src/http/errors'
import type { IdempotentRequest } from '../../../src/http/idempotency'
import { listIdentity, parseListQuery, readCursor, type ListShape } from '../../../src/http/list-query'
import type { PageRequest } from '../../../src/http/pagination'
import { isUuid } from '../../../src/ids'
import { isAdministrator, type Actor } from '../../../src/services/identity'
import { isoFromText, selectListPage, withIsoTimestamps } from '../../../src/sql'
import { compileStatement, runStatement } from '../../../src/statements'
import type { Writes } from '../../../src/writes'
import type { UserDirectory } from '../../auth/api'
import type { TeamDirectory } from '../../teams/api'
import type { ComponentInput, ComponentPatch, PageAccessInput, PageInput, PagePatch } from '../model'
import { components, pageAccess, pages } from '../schema'
import { ACTOR, actorRow, actorValues, MAY_EDIT_PAGE, MAY_USE_PAGE } from './access'
import { DISPLAY_CHANNEL, PAGE_ACCESS_CHANNEL } from './channels'
import { place, type Placement } from './layout'

type PageRow = typeof pages.$inferSelect
type ComponentRow = typeof components.$inferSelect

const serializePage = (row: PageRow) => ({ id: row.id, name: row.name, title: row.title, createdBy: row.createdBy, createdAt: row.createdAt.toISOString(), updatedAt: row.updatedAt.toISOString() })

function serializeComponent(row: ComponentRow) {
  return {
    id: row.id,
    pageId: row.pageId,
    type: row.type,
    title: row.title,
    x: row.x,
    y: row.y,
    width: row.width,
    height: row.height,
    data: (row.data as Record<string, unknown> | null) ?? null,
    timestamp: row.dataTimestamp,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  }
}

/** The page `page` with every column and whether the actor may feed it, if the actor (ACTOR) may see it. */
const VISIBLE_PAGE = sql`select p.id, p.organization_id as "organizationId", p.name, p.title, p.created_by as "createdBy", p.created_at as "createdAt", p.updated_at as "updatedAt",
    ${MAY_EDIT_PAGE} as editor
  from pages p, ${ACTOR} where p.id = ${sql.placeholder('page')} and p.organization_id = ${sql.placeholder('organization')} and ${MAY_USE_PAGE}`
const FIND_PAGE = { read: compileStatement(VISIBLE_PAGE), lock: compileStatement(sql`${VISIBLE_PAGE} for update of p`) }

/** A page as the live views and share links show it. */
export interface VisiblePage {
  id: string
  name: string
  title: string | null
}

/** A page the actor can see, whether they manage it (creator, administrator) and whether they are an editor (who also feeds it and shares it). */
export interface FoundPage {
  page: PageRow
  manage: boolean
  editor: boolean
}

/** The page if the actor may see it (404 otherwise), and what they may do with it: one statement, locking the row with `lock`. */
export async function findPage(executor: Executor, actor: Actor, pageId: string, lock = false): Promise<FoundPage> {
  if (!isUuid(pageId)) throw notFound('No such page.')
  const [row] = await runStatement<Omit<PageRow, 'createdAt' | 'updatedAt'> & { createdAt: string; updatedAt: string; editor: boolean }>(executor, lock ? FIND_PAGE.lock : FIND_PAGE.read, {
    ...actorValues(actor),
    page: pageId,
  })
  if (!row) throw notFound('No such page.')
  const { editor, ...columns } = row
  // Timestamps as Drizzle maps them (`new Date` of the text), so the row is the one a Drizzle select gives.
  const page: PageRow = { ...columns, createdAt: new Date(row.createdAt), updatedAt: new Date(row.updatedAt) }
  return { page, manage: isAdministrator(actor) || page.createdBy === actor.userId, editor }
}

/** The pages a user sees (MAY_USE_PAGE), oldest first: its only order, which its cursors continue. */
const PAGE_LIST: ListShape = {
  name: 'pages',
  filters: {},
  sorts: { createdAt: { column: 'p.created_at', cast: 'timestamptz' } },
  defaultOrder: ['createdAt'],
  tiebreaker: { column: 'p.id', cast: 'uuid' },
}
const PAGE_COLUMNS = 'p.id, p.name, p.title, p.created_by as "createdBy", p.created_at as "createdAt", p.updated_at as "updatedAt"'
type PageTextRow = Omit<ReturnType<typeof serializePage>, never>

/** The parts every list of this module has in common: its query (no filters), its cursor identity and the keys a cursor continues after. */
export function listOf(shape: ListShape, scope: string, request: PageRequest) {
  const query = parseListQuery(shape, {})
  const identity = listIdentity(shape, scope, query)
  return { order: query.order, identity, after: readCursor(request, identity, query.order) }
}

function requireManage(found: { manage: boolean }) {
  if (!found.manage) throw forbidden("Only the page's creator or an administrator may change it.")
}

async function requireUniqueName(executor: Executor, organizationId: string, name: string, exceptId?: string) {
  const [existing] = await executor
    .select({ id: pages.id })
    .from(pages)
    .where(and(eq(pages.organizationId, organizationId), sql`lower(${pages.name}) = lower(${name})`, exceptId ? ne(pages.id, exceptId) : undefined))
  if (existing) throw conflict('A page with this name already exists.', existing.id, 'name')
}

// ---- access list ----------------------------------------------------------------------------

/** An access entry as API v1 shows it. */
export interface PageAccessView {
  principalType: 'user' | 'team'
  principalId: string
  name: string
  level: 'viewer' | 'editor'
  createdAt: string
}

/** The access list's columns (alias `pa`, with the user `u` and team `t` it names). */
const ACCESS_COLUMNS = `pa.principal_type as "principalType", pa.principal_id as "principalId", coalesce(u.username, t.name) as name,
  pa.level, pa.created_at as "createdAt"`
const ACCESS_NAMES = `left join user_directory u on pa.principal_type = 'user' and u.id = pa.principal_id and u.organization_id = pa.organization_id
  left join team_directory t on pa.principal_type = 'team' and t.id = pa.principal_id and t.organization_id = pa.organization_id`

/** A page's access list in the order entries were made. */
const ACCESS_LIST: ListShape = {
  name: 'page-access',
  filters: {},
  sorts: { createdAt: { column: 'pa.created_at', cast: 'timestamptz' } },
  defaultOrder: ['createdAt'],
  tiebreaker: { column: 'pa.principal_id', cast: 'uuid' },
}
const ACCESS_FROM = `page_access pa ${ACCESS_NAMES}`
/** The access entries of the organization's page, as a condition on `pa`. */
const accessOf = (pageId: string, organizationId: string): SQL => sql`pa.page_id = ${pageId} and pa.organization_id = ${organizationId}`

// ---- components -----------------------------------------------------------------------------

/** A component's columns as the API shows them (alias `c`). */
export const COMPONENT_COLUMNS = sql`c.id, c.page_id as "pageId", c.type, c.title, c.x, c.y, c.width, c.height, c.data,
  c.data_timestamp as timestamp, c.created_at as "createdAt", c.updated_at as "updatedAt"`
export type ComponentTextRow = Omit<ReturnType<typeof serializeComponent>, 'createdAt' | 'updatedAt'> & { createdAt: string; updatedAt: string }
export const fromComponentText = (row: ComponentTextRow) => withIsoTimestamps(row)
/** The components of the organization's page, as a condition on `c`. */
const componentsOf = (pageId: string, organizationId: string): SQL => sql`c.page_id = ${pageId} and c.organization_id = ${organizationId}`
/** The components of the page `page` of the organization `organization` in grid order (row, then column), after the columns of a `select`. */
export const FROM_PAGE_COMPONENTS: SQL = sql`from components c where c.page_id = ${sql.placeholder('page')} and c.organization_id = ${sql.placeholder('organization')} order by c.y, c.x, c.id`
/** The same in pages (FROM_PAGE_COMPONENTS' order; the id breaks ties of a place two components share). */
const COMPONENT_LIST: ListShape = {
  name: 'components',
  filters: {},
  sorts: { y: { column: 'c.y', cast: 'int' }, x: { column: 'c.x', cast: 'int' } },
  defaultOrder: ['y', 'x'],
  tiebreaker: { column: 'c.id', cast: 'uuid' },
}


/** A component of the page; `lock` locks its row (by organization: on Citus a row lock must name the shard). */
async function findComponent(executor: Executor, organizationId: string, pageId: string, componentId: string, lock = false) {
  if (!isUuid(componentId)) throw notFound('No such component.')
  const query = executor
    .select()
    .from(components)
    .where(and(eq(components.id, componentId), eq(components.pageId, pageId), eq(components.organizationId, organizationId)))
  const [row] = lock ? await query.for('update') : await query
  if (!row) throw notFound('No such component.')
  return row
}

export interface PageDeps {
  db: Database
  writes: Writes
  users: UserDirectory
  teams: TeamDirectory
  maxComponentsPerPage: number
}

/** Pages, their access lists and components, bound once; every function returns its API shape. */
export function createPages({ db, writes, users, teams, maxComponentsPerPage }: PageDeps) {
  return {
    /** Pages the actor may see, oldest first, by page or cursor (a cursor is the actor's: what they see is their own list). */
    list(actor: Actor, request: PageRequest) {
      const from = sql`pages p, ${actorRow(sql`${actor.userId}`, sql`${actor.organizationId}`, sql`${actor.role}`)}`
      const { order, identity, after } = listOf(PAGE_LIST, `${actor.organizationId} ${actor.userId}`, request)
      return selectListPage<PageTextRow, PageTextRow>(
        db,
        { columns: PAGE_COLUMNS, from, conditions: [MAY_USE_PAGE], order, total: sql`select count(*) from ${from} where ${MAY_USE_PAGE}`, identity, after },
        request,
        withIsoTimestamps,
      )
    },

    async get(actor: Actor, pageId: string) {
      return serializePage((await findPage(db, actor, pageId)).page)
    },

    /** Creates a page; the caller is its creator (and so manages it). */
    async create(actor: Actor, input: PageInput, request?: IdempotentRequest) {
      return writes.change(actor, null, async ({ tx, audit }) => {
        const [page] = await tx
          .insert(pages)
          .values({ organizationId: actor.organizationId, name: input.name, title: input.title ?? null, createdBy: actor.userId })
          .onConflictDoNothing()
          .returning()
        // Nothing inserted: the name is taken (any case), so this throws the 409 naming that page.
        if (!page) await requireUniqueName(tx, actor.organizationId, input.name)
        await audit({ action: 'page.created', resourceType: 'page', resourceId: page!.id, changes: { after: { name: page!.name, title: page!.title } } })
        return created(serializePage(page!))
      }, request)
    },

    async update(actor: Actor, pageId: string, patch: PagePatch) {
      return writes.change(actor, null, async ({ tx, audit }) => {
        const found = await findPage(tx, actor, pageId, true)
        requireManage(found)
        const changes = changedFields(found.page, patch)
        if (!changes) return serializePage(found.page)
        if (patch.name !== undefined) await requireUniqueName(tx, actor.organizationId, patch.name, pageId)
        const [page] = await tx.update(pages).set({ ...patch, updatedAt: new Date() }).where(and(eq(pages.id, pageId), eq(pages.organizationId, actor.organizationId))).returning()
        await notify(tx, DISPLAY_CHANNEL, JSON.stringify([{ pageId }]))
        await audit({ action: 'page.updated', resourceType: 'page', resourceId: pageId, changes })
        return serializePage(page!)
      })
    },

    async delete(actor: Actor, pageId: string) {
      return writes.change(actor, null, async ({ tx, audit, deleting }) => {
        const found = await findPage(tx, actor, pageId, true)
        requireManage(found)
        // Observers remove what they keep of its components (a work source's rows go later, in batches).
        await deleting('page', pageId, null)
        await tx.delete(pages).where(and(eq(pages.id, pageId), eq(pages.organizationId, actor.organizationId)))
        await notify(tx, PAGE_ACCESS_CHANNEL, JSON.stringify({ pageId }))
        await audit({ action: 'page.deleted', resourceType: 'page', resourceId: pageId, changes: { before: { name: found.page.name, title: found.page.title } } })
        return { id: pageId }
      })
    },

    /** A page's access list in the order entries were made, by page or cursor (a cursor is checked before the page is). */
    async accessList(actor: Actor, pageId: string, request: PageRequest) {
      const { order, identity, after } = listOf(ACCESS_LIST, `${actor.organizationId} ${pageId}`, request)
      await findPage(db, actor, pageId)
      const entries = accessOf(pageId, actor.organizationId)
      return selectListPage<PageAccessView, PageAccessView>(
        db,
        { columns: ACCESS_COLUMNS, from: ACCESS_FROM, conditions: [entries], order, total: sql`select count(*) from ${sql.raw(ACCESS_FROM)} where ${entries}`, identity, after },
        request,
        (row) => ({ ...row, createdAt: isoFromText(row.createdAt) }),
      )
    },

    async grant(actor: Actor, pageId: string, input: PageAccessInput, request?: IdempotentRequest) {
      if ((input.userId === undefined) === (input.teamId === undefined)) throw badRequest('Give exactly one of userId and teamId.', input.userId === undefined ? 'userId' : 'teamId')
      const level = input.level ?? 'viewer'
      return writes.change(actor, null, async ({ tx, audit }) => {
        requireManage(await findPage(tx, actor, pageId, true))
        const principalType = input.userId !== undefined ? 'user' : 'team'
        const principalId = (input.userId ?? input.teamId)!
        const name = principalType === 'user' ? (await users.activeUser(tx, actor.organizationId, principalId))?.username : (await teams.find(tx, actor.organizationId, principalId))?.name
        if (name === undefined) throw badRequest(`No ${principalType} with this id in your organization.`, `${principalType}Id`)
        const [row] = await tx.insert(pageAccess).values({ pageId, principalType, principalId, level, organizationId: actor.organizationId }).onConflictDoNothing().returning()
        if (!row) throw conflict('This user or team is already on the access list.', principalId, `${principalType}Id`)
        await audit({ action: 'page.access_granted', resourceType: 'page', resourceId: pageId, changes: { after: { principalType, principalId, level } } })
        return created<PageAccessView>({ principalType, principalId, name, level, createdAt: row.createdAt.toISOString() })
      }, request)
    },

    async updateAccess(actor: Actor, pageId: string, principalId: string, level: 'viewer' | 'editor'): Promise<PageAccessView> {
      return writes.change(actor, null, async ({ tx, audit }) => {
        requireManage(await findPage(tx, actor, pageId, true))
        const [current] = isUuid(principalId)
          ? await queryText<PageAccessView>(tx, `select ${ACCESS_COLUMNS} from page_access pa ${ACCESS_NAMES} where pa.page_id = $1 and pa.principal_id = $2 and pa.organization_id = $3`, [pageId, principalId, actor.organizationId])
          : []
        if (!current) throw notFound('Not on the access list.')
        if (current.level === level) return { ...current, createdAt: isoFromText(current.createdAt) }
        await tx
          .update(pageAccess)
          .set({ level })
          .where(and(eq(pageAccess.pageId, pageId), eq(pageAccess.principalId, principalId), eq(pageAccess.organizationId, actor.organizationId)))
        // A lowered editor's share links stop: their open viewers are re-checked on every instance.
        await notify(tx, PAGE_ACCESS_CHANNEL, JSON.stringify({ pageId }))
        await audit({ action: 'page.access_updated', resourceType: 'page', resourceId: pageId, changes: { before: { principalId, level: current.level }, after: { principalId, level } } })
        return { ...current, level, createdAt: isoFromText(current.createdAt) }
      })
    },

    async revoke(actor: Actor, pageId: string, principalId: string) {
      return writes.change(actor, null, async ({ tx, audit }) => {
        requireManage(await findPage(tx, actor, pageId, true))
        const removed = isUuid(principalId)
          ? tx
              .delete(pageAccess)
              .where(and(eq(pageAccess.pageId, pageId), eq(pageAccess.principalId, principalId), eq(pageAccess.organizationId, actor.organizationId)))
              .returning()
          : []
        const [row] = await removed
        if (!row) throw notFound('Not on the access list.')
        await notify(tx, PAGE_ACCESS_CHANNEL, JSON.stringify({ pageId }))
        await audit({ action: 'page.access_revoked', resourceType: 'page', resourceId: pageId, changes: { before: { principalType: row.principalType, principalId, level: row.level } } })
        return { id: principalId }
      })
    },

    /** Components of a page in grid order (row, then column), by page or cursor (a cursor is checked before the page is). */
    async components(actor: Actor, pageId: string, request: PageRequest) {
      const { order, identity, after } = listOf(COMPONENT_LIST, `${actor.organizationId} ${pageId}`, request)
      await findPage(db, actor, pageId)
      const ofPage = componentsOf(pageId, actor.organizationId)
      return selectListPage<ComponentTextRow, ReturnType<typeof serializeComponent>>(
        db,
        { columns: COMPONENT_COLUMNS, from: 'components c', conditions: [ofPage], order, total: sql`select count(*) from components c where ${ofPage}`, identity, after },
        request,
        fromComponentText,
      )
    },

    async component(actor: Actor, pageId: string, componentId: string) {
      await findPage(db, actor, pageId)
      return serializeComponent(await findComponent(db, actor.organizationId, pageId, componentId))
    },

    /** Adds a component (its type is fixed for good) at the first free place of its size unless given one; open live pages show it. */
    async createComponent(actor: Actor, pageId: string, input: ComponentInput, request?: IdempotentRequest) {
      return writes.change(actor, null, async ({ tx, audit }) => {
        // The page row is locked: concurrent creates on one page count one after another.
        requireManage(await findPage(tx, actor, pageId, true))
        const placed = await queryText<Placement>(tx, 'select x, y, width, height from components where page_id = $1 and organization_id = $2', [pageId, actor.organizationId])
        if (placed.length >= maxComponentsPerPage) throw conflict(`A page holds at most ${maxComponentsPerPage} components (display.maxComponentsPerPage); delete one first.`)
        const [row] = await tx
          .insert(components)
          .values({ organizationId: actor.organizationId, pageId, type: input.type, title: input.title ?? null, ...place(placed, input) })
          .returning()
        await notify(tx, DISPLAY_CHANNEL, JSON.stringify([{ pageId, componentId: row!.id }]))
        await audit({ action: 'component.created', resourceType: 'component', resourceId: row!.id, changes: { after: { pageId, type: row!.type, title: row!.title } } })
        return created(serializeComponent(row!))
      }, request)
    },

    async updateComponent(actor: Actor, pageId: string, componentId: string, patch: ComponentPatch) {
      return writes.change(actor, null, async ({ tx, audit }) => {
        const found = await findPage(tx, actor, pageId)
        const current = await findComponent(tx, actor.organizationId, pageId, componentId, true)
        requireManage(found)
        const changes = changedFields(current, patch)
        if (!changes) return serializeComponent(current)
        const [row] = await tx
          .update(components)
          .set({ ...patch, version: sql`${components.version} + 1`, updatedAt: new Date() })
          .where(and(eq(components.id, componentId), eq(components.organizationId, actor.organizationId)))
          .returning()
        await notify(tx, DISPLAY_CHANNEL, JSON.stringify([{ pageId, componentId }]))
        await audit({ action: 'component.updated', resourceType: 'component', resourceId: componentId, changes })
        return serializeComponent(row!)
      })
    },

    async deleteComponent(actor: Actor, pageId: string, componentId: string) {
      return writes.change(actor, null, async ({ tx, audit, deleting }) => {
        const found = await findPage(tx, actor, pageId)
        // Observers first, before the component's row is locked: a work source's row is locked before
        // its component's, as its recompute takes them (the other order deadlocks with it). A refusal
        // below rolls back what they did.
        if (isUuid(componentId)) await deleting('component', componentId, null)
        const current = await findComponent(tx, actor.organizationId, pageId, componentId, true)
        requireManage(found)
        await tx.delete(components).where(and(eq(components.id, componentId), eq(components.organizationId, actor.organizationId)))
        await notify(tx, DISPLAY_CHANNEL, JSON.stringify([{ pageId, componentId }]))
        await audit({ action: 'component.deleted', resourceType: 'component', resourceId: componentId, changes: { before: { pageId, type: current.type, title: current.title } } })
        return { id: componentId }
      })
    },
  }
}

export type PageService = ReturnType<typeof createPages>
