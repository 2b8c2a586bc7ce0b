/**
 * Read-only share links of a page: `/s/<token>` shows the live page to anyone holding it, without
 * signing in, until it expires or is revoked, and only while its creator is active and may edit
 * the page (a link speaks for its creator: one who left, or lost editor access, shares no more).
 * The token is a secret shown once (`dsl_…`, with a checksum, as keys) and stored only as its
 * SHA-256 hash. The page's editors (its creator, administrators, `editor` entries) create, list
 * and revoke them; every change is audited, and a revocation closes the link's open viewers on
 * every instance (PAGE_ACCESS_CHANNEL).
 */
import { sql, type SQL } from 'drizzle-orm'
import { notify, queryText, type Database, type Executor } from '../../../src/db'
import { created } from '../../../src/http/answer'
import { badRequest, conflict, forbidden, notFound } from '../../../src/http/errors'
import type { IdempotentRequest } from '../../../src/http/idempotency'
import type { ListShape } from '../../../src/http/list-query'
import type { PageRequest } from '../../../src/http/pagination'
import { isUuid } from '../../../src/ids'
import { generateSecret, hashSecret, isWellFormedSecret, secretPrefix } from '../../../src/secrets'
import type { Actor } from '../../../src/services/identity'
import { isoFromText, selectListPage } from '../../../src/sql'
import { compileStatement, runStatement } from '../../../src/statements'
import type { Writes } from '../../../src/writes'
import { pageShareLinks } from '../schema'
import { MAY_EDIT_PAGE } from './access'
import { PAGE_ACCESS_CHANNEL } from './channels'
import { findPage, listOf, type VisiblePage } from './service'

/** Share link tokens: `dsl_` + 36 base62 characters + a 6-character checksum. */
export const SHARE_TOKEN_PREFIX = 'dsl'

/** A share link as API v1 shows it (never its token, but for the `url` of the answer that created it). */
export interface ShareLinkView {
  id: string
  pageId: string
  prefix: string
  createdBy: string | null
  createdAt: string
  expiresAt: string | null
}

const LINK_COLUMNS = `l.id, l.page_id as "pageId", l.token_prefix as prefix, l.created_by as "createdBy", l.created_at as "createdAt", l.expires_at as "expiresAt"`
/** A page's links, oldest first: the list's only order, which its cursors continue. */
const LINK_LIST: ListShape = {
  name: 'share-links',
  filters: {},
  sorts: { createdAt: { column: 'l.created_at', cast: 'timestamptz' } },
  defaultOrder: ['createdAt'],
  tiebreaker: { column: 'l.id', cast: 'uuid' },
}
/** The links of the organization's page, as a condition on `l`. */
const linksOf = (pageId: string, organizationId: string): SQL => sql`l.page_id = ${pageId} and l.organization_id = ${organizationId}`
const fromText = (row: ShareLinkView): ShareLinkView => ({ ...row, createdAt: isoFromText(row.createdAt), expiresAt: row.expiresAt === null ? null : isoFromText(row.expiresAt) })

/** The page, if the actor may share it (an editor); 404 when they cannot see it, 403 when they only view it. */
async function requireEditor(executor: Executor, actor: Actor, pageId: string, lock = false) {
  const found = await findPage(executor, actor, pageId, lock)
  if (!found.editor) throw forbidden("Only the page's editors (its creator, administrators and editor entries) may manage its share links.")
  return found.page
}

/**
 * The links `l` that work, with their page `p`: not expired, and their creator (`u`, `a`) active
 * and an editor of the page. A FROM list and its condition, for resolving a token and for
 * re-checking the open viewers of links.
 */
const WORKING_LINKS = sql`page_share_links l
  join pages p on p.id = l.page_id and p.organization_id = l.organization_id
  join user_directory u on u.id = l.created_by and u.organization_id = l.organization_id and u.status = 'active'
  cross join lateral (select u.id as user_id, u.organization_id, u.role) a`
const LINK_WORKS = sql`(l.expires_at is null or l.expires_at > now()) and ${MAY_EDIT_PAGE}`

/** Of the links `linkIds`, those that still work. */
const LINKS_STILL_WORKING = compileStatement(sql`select l.id from ${WORKING_LINKS} where l.id = any(${sql.placeholder('linkIds')}::uuid[]) and ${LINK_WORKS}`)

/** The link whose token hashes to `token`, with its page, if it works. */
const WORKING_LINK = compileStatement(
  sql`select l.id as "linkId", l.expires_at as "expiresAt", p.id, p.name, p.title, p.organization_id as "organizationId" from ${WORKING_LINKS} where l.token_hash = ${sql.placeholder('token')} and ${LINK_WORKS}`,
)

/** Those of `linkIds` that still work (not revoked or expired, their creator still active and an editor of the page): one statement, for re-checking open viewers. */
export async function workingLinks(executor: Executor, linkIds: readonly string[]): Promise<Set<string>> {
  const rows = await runStatement<{ id: string }>(executor, LINKS_STILL_WORKING, { linkIds: [...new Set(linkIds)] })
  return new Set(rows.map((row) => row.id))
}

/** A valid link's page and what its stream needs: the link's id and end. */
export interface SharedPage {
  linkId: string
  expiresAt: Date | null
  /** The page's organization, which the statements that read the page name. */
  organizationId: string
  page: VisiblePage
}

export function createShareLinks({ db, writes, maxLinksPerPage }: { db: Database; writes: Writes; maxLinksPerPage: number }) {
  return {
    /** The page's links that have not been revoked (expired ones included, with their `expiresAt`), oldest first, by page or cursor. */
    async list(actor: Actor, pageId: string, request: PageRequest) {
      const { order, identity, after } = listOf(LINK_LIST, `${actor.organizationId} ${pageId}`, request)
      await requireEditor(db, actor, pageId)
      const links = linksOf(pageId, actor.organizationId)
      return selectListPage<ShareLinkView, ShareLinkView>(
        db,
        { columns: LINK_COLUMNS, from: 'page_share_links l', conditions: [links], order, total: sql`select count(*) from page_share_links l where ${links}`, identity, after },
        request,
        fromText,
      )
    },

    /** One link of the page (its editors). */
    async get(actor: Actor, pageId: string, linkId: string): Promise<ShareLinkView> {
      await requireEditor(db, actor, pageId)
      const [row] = isUuid(linkId) ? await queryText<ShareLinkView>(db, `select ${LINK_COLUMNS} from page_share_links l where l.id = $1 and l.page_id = $2 and l.organization_id = $3`, [linkId, pageId, actor.organizationId]) : []
      if (!row) throw notFound('No such share link.')
      return fromText(row)
    },

    /** Creates a link; its `url` (`/s/<token>`) is shown in this answer only. */
    async create(actor: Actor, pageId: string, input: { expiresAt?: string | null }, request?: IdempotentRequest) {
      const expiresAt = input.expiresAt ? new Date(input.expiresAt) : null
      if (expiresAt && expiresAt.getTime() <= Date.now()) throw badRequest('The expiry must be in the future.', 'expiresAt')
      const token = generateSecret(SHARE_TOKEN_PREFIX)
      return writes.change(actor, null, async ({ tx, audit }) => {
        // The page row is locked: concurrent creates on one page count one after another.
        await requireEditor(tx, actor, pageId, true)
        const [{ count }] = (await queryText<{ count: number }>(tx, 'select count(*)::int as count from page_share_links where page_id = $1 and organization_id = $2', [pageId, actor.organizationId])) as [{ count: number }]
        if (count >= maxLinksPerPage) throw conflict(`A page has at most ${maxLinksPerPage} share links (display.maxShareLinksPerPage); revoke one first.`)
        const [row] = await tx
          .insert(pageShareLinks)
          .values({ organizationId: actor.organizationId, pageId, tokenHash: hashSecret(token), tokenPrefix: secretPrefix(token), createdBy: actor.userId, expiresAt })
          .returning()
        const view: ShareLinkView = { id: row!.id, pageId, prefix: row!.tokenPrefix, createdBy: row!.createdBy, createdAt: row!.createdAt.toISOString(), expiresAt: row!.expiresAt?.toISOString() ?? null }
        await audit({ action: 'page.share_link_created', resourceType: 'page_share_link', resourceId: view.id, changes: { after: { pageId, prefix: view.prefix, expiresAt: view.expiresAt } } })
        return created({ ...view, url: `/s/${token}` })
      }, request)
    },

    /** Revokes a link: it stops at once, and its open viewers are closed on every instance. */
    async revoke(actor: Actor, pageId: string, linkId: string) {
      return writes.change(actor, null, async ({ tx, audit }) => {
        await requireEditor(tx, actor, pageId, true)
        const [row] = isUuid(linkId)
          ? await queryText<ShareLinkView>(tx, `delete from page_share_links l where l.id = $1 and l.page_id = $2 and l.organization_id = $3 returning ${LINK_COLUMNS}`, [linkId, pageId, actor.organizationId])
          : []
        if (!row) throw notFound('No such share link.')
        await notify(tx, PAGE_ACCESS_CHANNEL, JSON.stringify({ pageId }))
        await audit({ action: 'page.share_link_revoked', resourceType: 'page_share_link', resourceId: linkId, changes: { before: { pageId, prefix: row.prefix, expiresAt: fromText(row).expiresAt } } })
        return { id: linkId }
      })
    },

    /** The page a token shows, if the token is a working link's (well-formed, not revoked, not expired, its creator active and an editor); one statement. */
    async resolve(token: string): Promise<SharedPage | undefined> {
      // Elysia gives null for a path segment that is not valid percent-encoding (`/s/%ZZ`).
      if (typeof token !== 'string' || !isWellFormedSecret(SHARE_TOKEN_PREFIX, token)) return undefined
      const [row] = await runStatement<{ linkId: string; expiresAt: string | null; id: string; name: string; title: string | null; organizationId: string }>(db, WORKING_LINK, {
        token: hashSecret(token),
      })
      if (!row) return undefined
      return {
        linkId: row.linkId,
        expiresAt: row.expiresAt === null ? null : new Date(isoFromText(row.expiresAt)),
        organizationId: row.organizationId,
        page: { id: row.id, name: row.name, title: row.title },
      }
    },
  }
}

export type ShareLinks = ReturnType<typeof createShareLinks>
