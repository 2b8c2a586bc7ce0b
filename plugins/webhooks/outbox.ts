/**
 * The recording side of the outbox: an observer of the change feed that writes, in the change's
 * own transaction, the event and one pending delivery per matching webhook, in one statement.
 * Whether anything matches is first asked of an in-memory copy of every organization's enabled
 * webhooks (no SQL for a change nobody subscribed to); the statement decides again from the
 * table, so the copy only has to be a superset. Every instance refreshes an organization's copy
 * when a webhook of it changes (NOTIFY), and all of it when notifications may have been missed.
 */
import type { ChangeEvent, ChangeObserver } from '../../src/changes'
import { queryText, type Database, type Executor, type Transaction } from '../../src/db'
import type { EventBus } from '../../src/events'
import { uuidv7 } from '../../src/ids'
import type { Logger } from '../../src/log'
import { describeError } from '../../src/log'
import type { ProjectAccessService } from '../projects/api'

/** Events of no project (pings) share this stream key. */
export const NO_PROJECT = '00000000-0000-0000-0000-000000000000'
/** Wakes workers on every instance after a commit that queued deliveries; carries `{organizationId}` (the organization to claim in). */
export const OUTBOX_CHANNEL = 'webhook_outbox'
/** Carries `{organizationId}` after a webhook of that organization changed. */
export const WEBHOOKS_CHANNEL = 'webhooks_changed'

interface Subscription {
  id: string
  projectId: string | null
  events: ReadonlySet<string>
  createdBy: string
}

const SELECT_ENABLED = `select id, organization_id as "organizationId", project_id as "projectId", events, created_by as "createdBy" from webhooks where enabled`

/**
 * $1 organization, $2 project (or null), $3 type, $4 event id, $5 actor user, $6 via, $7 data (JSON),
* $8 ids of webhooks granted a project.deleted, $9 the no-project key, $10 previous values (JSON or null). Takes the project's
 * sequence row (so events of a project are numbered in commit order), then writes the event and
 * its deliveries, and wakes the workers at commit, naming the organization (on Citus the
 * statement's last step runs on the coordinator, where the workers listen); nothing at all when
 * no webhook matches.
 */
const recordStatement = (webhooks: string) => `with w as (${webhooks}),
  s as (
    insert into webhook_sequences as q (project_key, organization_id, last_seq)
    select coalesce($2::uuid, $9::uuid), $1, 1 where exists (select 1 from w)
    on conflict (project_key, organization_id) do update set last_seq = q.last_seq + 1
    returning last_seq
  ),
  e as (
    insert into webhook_events (id, organization_id, project_id, seq, type, actor_user_id, via, data, previous)
    select $4, $1, $2::uuid, s.last_seq, $3, $5, $6, $7::json, $10::json from s
    returning id, seq
  ),
  d as (
    insert into webhook_deliveries (id, organization_id, webhook_id, event_id, project_key, seq, granted)
    select gen_random_uuid(), $1, w.id, e.id, coalesce($2::uuid, $9::uuid), e.seq, w.id = any($8::uuid[]) from w, e
    returning 1
  )
  select pg_notify('${OUTBOX_CHANNEL}', json_build_object('organizationId', $1::uuid)::text) from (select 1 from d limit 1) queued`

const RECORD_FOR_MATCHING = recordStatement(
  `select id from webhooks where organization_id = $1 and enabled and (project_id is null or project_id = $2::uuid) and events && array[$3::text, split_part($3::text, '.', 1) || '.*', '*']`,
)
/** The same for one webhook ($10), whatever it subscribes to: a test ping. */
const RECORD_FOR_ONE = recordStatement('select id from webhooks where organization_id = $1 and id = $11')



export interface RecordedEvent {
  organizationId: string
  projectId: string | null
  type: string
  actor: { userId: string | null; via: string }
  data: unknown
  /** An update's old values of the changed fields. */
  previous?: Record<string, unknown>
}

/** Writes an event and its deliveries for the matching webhooks (all of them, or `only` one), in `executor`'s transaction. */
export async function recordEvent(executor: Executor, event: RecordedEvent, options: { granted?: readonly string[]; only?: string } = {}): Promise<string> {
  const { granted = [], only } = options
  const id = uuidv7()
  const previous = event.previous === undefined ? null : JSON.stringify(event.previous)
  const parameters = [event.organizationId, event.projectId, event.type, id, event.actor.userId, event.actor.via, JSON.stringify(event.data), granted, NO_PROJECT, previous]
  if (only) await queryText(executor, RECORD_FOR_ONE, [...parameters, only])
  else await queryText(executor, RECORD_FOR_MATCHING, parameters)
  return id
}

export class Subscriptions {
  private byOrganization = new Map<string, Subscription[]>()

  constructor(private readonly db: Database) {}

  /** Loads every organization's enabled webhooks (start, and after missed notifications). */
  async loadAll(): Promise<void> {
    const rows = await queryText<Subscription & { organizationId: string; events: string[] }>(this.db, SELECT_ENABLED, [])
    const next = new Map<string, Subscription[]>()
    for (const row of rows) {
      const list = next.get(row.organizationId) ?? []
      list.push({ id: row.id, projectId: row.projectId, events: new Set(row.events), createdBy: row.createdBy })
      next.set(row.organizationId, list)
    }
    this.byOrganization = next
  }

  /** Reloads one organization's webhooks (after one of them changed). */
  async reload(organizationId: string): Promise<void> {
    const rows = await queryText<Subscription & { events: string[] }>(this.db, `${SELECT_ENABLED} and organization_id = $1`, [organizationId])
    if (rows.length) this.byOrganization.set(organizationId, rows.map((row) => ({ id: row.id, projectId: row.projectId, events: new Set(row.events), createdBy: row.createdBy })))
    else this.byOrganization.delete(organizationId)
  }

  /** The webhooks that receive events of the project (whatever their types). */
  forProject(organizationId: string, projectId: string | null): Subscription[] {
    return (this.byOrganization.get(organizationId) ?? []).filter((hook) => hook.projectId === null || hook.projectId === projectId)
  }

  matching(organizationId: string, type: string, projectId: string | null): Subscription[] {
    const list = this.byOrganization.get(organizationId)
    if (!list) return []
    const family = `${type.slice(0, type.indexOf('.'))}.*`
    return list.filter((hook) => (hook.projectId === null || hook.projectId === projectId) && (hook.events.has('*') || hook.events.has(type) || hook.events.has(family)))
  }
}

/** Marks the queued deliveries of a deleted project as granted, for the webhooks whose creator could see it: $1 organization, $2 project, $3 webhooks. */
const GRANT_QUEUED = `update webhook_deliveries set granted = true
  where organization_id = $1 and project_key = $2 and webhook_id = any($3::uuid[]) and status = 'pending' and not granted`

/**
 * The change-feed observer. When a project is deleted it notes, for every webhook of the project
 * (whatever its event types), whether its creator could see the project as it was deleted (the
 * rows are still there: the event is recorded before them): that webhook's `project.deleted` and
 * the project's events still queued for it then go out after the project is gone.
 */
export function webhookObserver(subscriptions: Subscriptions, access: ProjectAccessService): ChangeObserver {
  return {
    wants: (organizationId, type, projectId) =>
      (type === 'project.deleted' ? subscriptions.forProject(organizationId, projectId) : subscriptions.matching(organizationId, type, projectId)).length > 0,
    async observe(tx: Transaction, event: ChangeEvent) {
      const granted: string[] = []
      if (event.type === 'project.deleted' && event.projectId) {
        const hooks = subscriptions.forProject(event.organizationId, event.projectId)
        for (const creator of new Set(hooks.map((hook) => hook.createdBy)))
          if ((await access.projectsVisibleTo(tx, event.organizationId, creator, [event.projectId])).size)
            granted.push(...hooks.filter((hook) => hook.createdBy === creator).map((hook) => hook.id))
        if (granted.length) await queryText(tx, GRANT_QUEUED, [event.organizationId, event.projectId, granted])
      }
      const recorded = { organizationId: event.organizationId, projectId: event.projectId, type: event.type, actor: event.actor, data: await event.data(), previous: event.previous }
      await recordEvent(tx, recorded, { granted })
    },
  }
}

/** Keeps `subscriptions` current on this instance from every instance's webhook changes. */
export async function followWebhookChanges(subscriptions: Subscriptions, events: EventBus, log: Logger): Promise<void> {
  const warn = (error: Error) => log.warn('webhooks: could not reload subscriptions', describeError(error))
  await subscriptions.loadAll()
  await events.subscribe(
    WEBHOOKS_CHANNEL,
    (payload: { organizationId?: unknown }) => {
      if (typeof payload?.organizationId === 'string') subscriptions.reload(payload.organizationId).catch(warn)
    },
    () => subscriptions.loadAll().catch(warn),
  )
}
