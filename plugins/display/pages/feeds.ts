/**
 * Components fed by another plugin instead of display calls (a work source): marked with the
 * feed's name and label (display calls to them are 409 componentBound), written by their feeder
 * in its own transaction, and told to live viewers and listeners once that commits.
 */
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import type { TSchema } from '@sinclair/typebox'
import { queryText, type Database, type Executor, type Transaction } from '../../../src/db'
import { forbidden, notFound } from '../../../src/http/errors'
import { isUuid } from '../../../src/ids'
import type { Actor } from '../../../src/services/identity'
import type { ComponentFeeds, FedComponent } from '../api'
import type { ChangeNotifier } from '../calls/changes'
import { ComponentData } from '../model'
import { findPage } from './service'

const checks = new Map<string, TypeCheck<TSchema>>(Object.entries(ComponentData).map(([type, schema]) => [type, TypeCompiler.Compile(schema as TSchema)]))

const COLUMNS = `c.id, c.page_id as "pageId", c.type, c.title, c.feed, c.feed_label as "feedLabel"`

export function createComponentFeeds(db: Database, notifier: ChangeNotifier): ComponentFeeds {
  const component = async (executor: Executor, actor: Actor, pageId: string, componentId: string, lock: boolean): Promise<FedComponent> => {
    const [row] = isUuid(componentId)
      ? await queryText<FedComponent>(executor, `select ${COLUMNS} from components c where c.id = $1 and c.organization_id = $2 and c.page_id = $3${lock ? ' for no key update' : ''}`, [
          componentId,
          actor.organizationId,
          pageId,
        ])
      : []
    if (!row) throw notFound('No such component.')
    return row
  }
  return {
    async visible(actor, pageId, componentId) {
      const { page } = await findPage(db, actor, pageId)
      return component(db, actor, page.id, componentId, false)
    },
    async editable(tx, actor, pageId, componentId) {
      const { page, editor } = await findPage(tx, actor, pageId)
      if (!editor) throw forbidden('Only the editors of this page may do this.')
      return component(tx, actor, page.id, componentId, true)
    },
    async setFeed(tx, organizationId, componentId, feed) {
      // Unbound, display calls own its data again: the feed's last stamp does not make their first update stale.
      await queryText(
        tx,
        `update components set feed = $3, feed_label = $4, data_timestamp = case when $3::text is null then null else data_timestamp end, version = version + 1, updated_at = now()
          where id = $1 and organization_id = $2`,
        [componentId, organizationId, feed?.name ?? null, feed?.label ?? null],
      )
    },
    async write(tx, organizationId, componentId, feed, data) {
      const check = checks.get(data.type)
      if (!check?.Check(data)) throw new Error(`a ${feed} feed wrote data that is no ${data.type}'s: ${JSON.stringify([...(check?.Errors(data) ?? [])].slice(0, 3))}`)
      const [row] = await queryText<{ pageId: string }>(
        tx,
        `update components set data = $4::jsonb, data_timestamp = $5, version = version + 1, updated_at = now()
          where id = $1 and organization_id = $2 and feed = $3 and type = $6 returning page_id as "pageId"`,
        [componentId, organizationId, feed, JSON.stringify(data), Date.now() / 1000, data.type],
      )
      return row?.pageId
    },
    changed: (organizationId, pageId, componentId) => notifier.changed(organizationId, pageId, componentId),
  }
}
