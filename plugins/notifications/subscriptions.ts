/**
 * Watching: a user's explicit watch or ignore of a work item (ignoring wins over the automatic
 * rules, and stops `commented`, `status_changed` and `created`, never `assigned` or `mentioned`),
 * and their watch of a whole project. Viewer access is enough; what the caller cannot view is
 * 404. A subscription is the user's own state: not audited.
 */
import { sql } from 'drizzle-orm'
import type { Database } from '../../src/db'
import type { Actor } from '../../src/services/identity'
import { runQuery } from '../../src/statements'
import type { ProjectAccessService } from '../projects/api'
import type { WorkItemsFace } from '../work-items/api'

/**
 * Why the caller watches (or not): `manual` (they said so), `created`, `assigned`, `mentioned`,
 * `commented` (automatic), `project` (they watch its project), `ignored` (they said not to), or
 * null (they do not watch it).
 */
export interface Subscription {
  watching: boolean
  reason: string | null
}

export function createSubscriptions(deps: { db: Database; access: ProjectAccessService; workItems: WorkItemsFace }) {
  const { db, access, workItems } = deps

  async function itemSubscription(actor: Actor, item: { id: string; projectId: string }): Promise<Subscription> {
    const [row] = await runQuery<{ watching: boolean | null; reason: string | null; project: boolean }>(
      db,
      sql`select s.watching, s.reason, exists (select 1 from project_subscriptions p where p.project_id = ${item.projectId} and p.user_id = ${actor.userId} and p.organization_id = ${actor.organizationId}) as project
        from (select 1) one left join work_item_subscriptions s on s.work_item_id = ${item.id} and s.user_id = ${actor.userId} and s.organization_id = ${actor.organizationId}`,
    )
    if (row?.watching === false) return { watching: false, reason: 'ignored' }
    if (row?.watching) return { watching: true, reason: row.reason }
    return row?.project ? { watching: true, reason: 'project' } : { watching: false, reason: null }
  }

  /** Sets the caller's own row for the work item: a watch (`manual`) or an ignore. */
  async function setItem(actor: Actor, ref: string, watching: boolean): Promise<Subscription> {
    const item = await workItems.locate(actor, ref)
    await runQuery(
      db,
      sql`insert into work_item_subscriptions (work_item_id, user_id, organization_id, project_id, watching, reason)
        values (${item.id}, ${actor.userId}, ${actor.organizationId}, ${item.projectId}, ${watching}, 'manual')
        on conflict (work_item_id, user_id, organization_id) do update set watching = excluded.watching, reason = excluded.reason`,
    )
    return itemSubscription(actor, item)
  }

  async function projectSubscription(actor: Actor, projectId: string): Promise<Subscription> {
    const [row] = await runQuery<{ one: number }>(
      db,
      sql`select 1 as one from project_subscriptions where project_id = ${projectId} and user_id = ${actor.userId} and organization_id = ${actor.organizationId}`,
    )
    return row ? { watching: true, reason: 'manual' } : { watching: false, reason: null }
  }

  return {
    getItem: async (actor: Actor, ref: string) => itemSubscription(actor, await workItems.locate(actor, ref)),
    watchItem: (actor: Actor, ref: string) => setItem(actor, ref, true),
    ignoreItem: (actor: Actor, ref: string) => setItem(actor, ref, false),

    async getProject(actor: Actor, projectId: string): Promise<Subscription> {
      const { projectId: id } = await access.requireProjectAccess(actor, projectId, 'viewer')
      return projectSubscription(actor, id)
    },
    async watchProject(actor: Actor, projectId: string): Promise<Subscription> {
      const { projectId: id } = await access.requireProjectAccess(actor, projectId, 'viewer')
      await runQuery(
        db,
        sql`insert into project_subscriptions (project_id, user_id, organization_id) values (${id}, ${actor.userId}, ${actor.organizationId}) on conflict do nothing`,
      )
      return projectSubscription(actor, id)
    },
    async unwatchProject(actor: Actor, projectId: string): Promise<Subscription> {
      const { projectId: id } = await access.requireProjectAccess(actor, projectId, 'viewer')
      await runQuery(db, sql`delete from project_subscriptions where project_id = ${id} and user_id = ${actor.userId} and organization_id = ${actor.organizationId}`)
      return projectSubscription(actor, id)
    },
  }
}

export type Subscriptions = ReturnType<typeof createSubscriptions>
