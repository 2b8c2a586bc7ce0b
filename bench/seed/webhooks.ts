/**
 * The webhook benchmarks' data: one organization (its administrator's key) with 10 projects of 50
 * work items each, and their paths with the projects interleaved (consecutive paths, different
 * projects: each change goes to another delivery stream).
 */
import { queryText } from '../../src/db'
import { seededDatabase } from '../lib/database'
import { seedOrganization, seedProject } from './organization'
import { seedWork } from './work'

export const PROJECTS = 10
export const ITEMS_PER_PROJECT = 50
const SCOPES = ['work_items:read', 'work_items:write', 'webhooks:read', 'webhooks:write']

export interface Fixture {
  url: string
  secret: string
  /** `/api/v1/projects/{p}/work-items/{id}`, the projects interleaved (consecutive paths, different projects). */
  paths: string[]
}

export async function seedWebhooks(name: string): Promise<Fixture> {
  const { url, seeded } = await seededDatabase(name, async (db) => {
    const seeded = await seedOrganization(db, { scopes: SCOPES, role: 'administrator' })
    const projects = [seeded.projectId]
    for (let i = 1; i < PROJECTS; i++) projects.push(await seedProject(db, seeded.organizationId, seeded.userId, `Bench project ${i + 1}`))
    const byProject: string[][] = []
    for (const projectId of projects) {
      await seedWork(db, { ...seeded, projectId }, { workItems: ITEMS_PER_PROJECT, entries: 0 })
      const items = await queryText<{ id: string }>(db, 'select id from work_items where project_id = $1 order by number', [projectId])
      byProject.push(items.map((item) => `/api/v1/projects/${projectId}/work-items/${item.id}`))
    }
    return { secret: seeded.secret, byProject }
  })
  const paths: string[] = []
  for (let i = 0; i < ITEMS_PER_PROJECT; i++) for (const list of seeded.byProject) paths.push(list[i]!)
  return { url, secret: seeded.secret, paths }
}
