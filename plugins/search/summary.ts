/** A project at a glance: work items by status, entry and relationship counts, recent activity (through the owners' read models). */
import { sql } from 'drizzle-orm'
import { queryText, type Database } from '../../src/db'
import { compileStatement, runStatement } from '../../src/statements'
import type { ProjectAccessService } from '../projects/api'
import type { Actor } from '../../src/services/identity'
import { fromWorkItemText, WORK_ITEM_STATUSES, workItemColumns, type WorkItemStatus, type WorkItemTextRow } from '../work-items/api'

/**
 * Work items by status and relationships from the counts their owners maintain (a few rows
 * whatever the project's size); entries are counted (their counts are kept per work item).
 */
const COUNTS = `select
    (select coalesce(json_object_agg(status, items), '{}') from work_item_status_counts where project_id = $1 and organization_id = $2) as "byStatus",
    (select count(*) from entry_documents where project_id = $1 and organization_id = $2) as entries,
    (select coalesce(sum(items), 0) from relationship_type_counts where project_id = $1 and organization_id = $2) as relationships`

const RECENT = compileStatement(
  sql`select ${workItemColumns(sql`${sql.placeholder('organization')}`)} from work_item_documents w where w.project_id = ${sql.placeholder('project')} and w.organization_id = ${sql.placeholder('organization')} order by w.updated_at desc, w.id desc limit 10`,
)

/** Two statements after the access check. */
export async function projectSummary(db: Database, access: ProjectAccessService, actor: Actor, projectId: string) {
  await access.requireProjectAccess(actor, projectId, 'viewer')
  const [[counts], recent] = await Promise.all([
    queryText<{ byStatus: Record<string, number | string> | string; entries: string; relationships: string }>(db, COUNTS, [projectId, actor.organizationId]),
    runStatement<WorkItemTextRow>(db, RECENT, { project: projectId, organization: actor.organizationId }),
  ])
  const raw = typeof counts!.byStatus === 'string' ? JSON.parse(counts!.byStatus) : counts!.byStatus
  const byStatus = Object.fromEntries(WORK_ITEM_STATUSES.map((status) => [status, 0])) as Record<WorkItemStatus, number>
  for (const [status, n] of Object.entries(raw as Record<string, number | string>)) byStatus[status as WorkItemStatus] = Number(n)
  return {
    projectId,
    workItems: { total: Object.values(byStatus).reduce((a, b) => a + b, 0), byStatus },
    entries: Number(counts!.entries),
    relationships: Number(counts!.relationships),
    recentlyUpdated: recent.map(fromWorkItemText),
  }
}
