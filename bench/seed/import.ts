/**
 * The import benchmark's organization and files: one organization, its owner's key (the import's
 * write scopes and the export's read scopes), five labels of the organization, and several empty
 * projects the owner owns; an NDJSON file in the export's exact shape (`{"type", "data"}` lines:
 * the `project`, the `label`s, the owner's `member` line, then `work_item`s by number, their
 * `entry`s and `relationship`s), and a CSV per table of the same values for psql's `\copy` (the
 * database's part alone).
 *
 * Each work item (about 590 bytes a line, some 400 of them the export's ids, key, times and names:
 * 100,000 fit the import's 64 MiB with these lengths): a title of 80 characters (one in seven with
 * quotes and accented letters, which JSON escapes or sends as UTF-8), a description of 90 with a
 * line break, statuses in turn,
 * priorities 0–4, numbers 1..N and positions 0..N-1, one in five assigned to the owner (by id),
 * one in three with a due date, one in ten with a label (`{id, name, color}`, the id the file's
 * `label` line gives, matched by name in the organization). One entry per ten work items (on
 * every tenth; comments, a note in three), one relationship per hundred (each between two
 * neighbours, the four types in turn).
 */
import { sql } from 'drizzle-orm'
import { queryText, type Database } from '../../src/db'
import { seedOrganization, seedProject, type Seeded } from './organization'

/** The import's scopes (docs/api.md, "Moving work in and out") and the export's, to read back. */
export const IMPORT_SCOPES = ['projects:write', 'work_items:write', 'entries:write', 'relationships:write', 'projects:read', 'work_items:read', 'entries:read', 'relationships:read']

export const IMPORT_LABELS: Array<[string, string]> = [
  ['bug', '#d73a4a'],
  ['feature', '#a2eeef'],
  ['chore', '#cfd3d7'],
  ['design', '#7057ff'],
  ['urgent "now"', '#b60205'],
]

const STATUSES = ['todo', 'in_progress', 'done', 'cancelled']
const RELATIONSHIP_TYPES = ['blocks', 'relates_to', 'duplicates', 'parent_of']
const BASE_TIME = Date.parse('2026-01-01T00:00:00.000Z')

export interface ImportOrganization extends Seeded {
  /** Empty projects the owner owns (the seeded one first). */
  projects: string[]
  /** The organization's labels, in IMPORT_LABELS's order. */
  labelIds: string[]
}

/** Seeds `db` (fresh, migrated) with the organization, its labels and `projects` empty projects. */
export async function seedImportOrganization(db: Database, projects: number): Promise<ImportOrganization> {
  const seeded = await seedOrganization(db, { scopes: IMPORT_SCOPES })
  const ids = [seeded.projectId]
  for (let i = 1; i < projects; i++) ids.push(await seedProject(db, seeded.organizationId, seeded.userId, `Import target ${i}`))
  const labels = await queryText<{ id: string }>(
    db,
    `insert into labels (id, organization_id, name, color)
       select gen_random_uuid(), $1, l.name, l.color from unnest($2::text[], $3::text[]) with ordinality as l(name, color, n) order by l.n
     returning id`,
    [seeded.organizationId, IMPORT_LABELS.map(([name]) => name), IMPORT_LABELS.map(([, color]) => color)],
  )
  await db.execute(sql`analyze`)
  return { ...seeded, projects: ids, labelIds: labels.map((label) => label.id) }
}

/** Text of `length` characters, the same for the same `seed`. */
function filler(seed: number, length: number): string {
  let text = ''
  let n = seed
  while (text.length < length) {
    n = Number(BigInt(Bun.hash(String(n))) % 0xffffffffffn)
    text += `${n.toString(16)} `
  }
  return text.slice(0, length)
}

/** The values of work item `i` (1..N), shared by the NDJSON and the CSV. */
export function workItemValues(i: number) {
  const title = `Item ${i}${i % 7 === 0 ? ' "quoted" café — naïve ' : ' plain words, nothing to escape '}${filler(i, 80)}`.slice(0, 80)
  const description = `${filler(i + 1_000_000_000, 45)}\n${filler(i + 2_000_000_000, 44)}`
  const at = new Date(BASE_TIME + i * 1000).toISOString()
  return {
    number: i,
    title,
    description,
    status: STATUSES[i % 4]!,
    priority: i % 5,
    assigned: i % 5 === 0,
    dueDate: i % 3 === 0 ? new Date(Date.UTC(2027, 0, 1 + (i % 365))).toISOString().slice(0, 10) : null,
    position: i - 1,
    /** Index into IMPORT_LABELS, or null. */
    label: i % 10 === 0 ? (i / 10) % IMPORT_LABELS.length : null,
    at,
  }
}

/** Entry k (1..N/10): on work item 10k. */
export function entryValues(k: number) {
  return { item: 10 * k, kind: k % 3 === 0 ? 'note' : 'comment', body: `Entry ${k}: ${filler(k + 3_000_000_000, 80)}`, at: new Date(BASE_TIME + 10 * k * 1000 + 500).toISOString() }
}

/** Relationship k (1..N/100): from work item 100k-99 to 100k-98. */
export function relationshipValues(k: number) {
  return { source: 100 * k - 99, target: 100 * k - 98, type: RELATIONSHIP_TYPES[k % RELATIONSHIP_TYPES.length]!, at: new Date(BASE_TIME + 100 * k * 1000 + 700).toISOString() }
}

export interface ImportFile {
  path: string
  bytes: number
  lines: number
  items: number
  entries: number
  relationships: number
  labelled: number
  assigned: number
}

/** Writes the NDJSON of `items` work items, as a project of another organization exports it (its own ids), referring to the owner by id. */
export async function writeImportNdjson(path: string, items: number, owner: { userId: string }): Promise<ImportFile> {
  const writer = Bun.file(path).writer({ highWaterMark: 1024 * 1024 })
  const projectId = crypto.randomUUID()
  const key = 'PSOURCE'
  const labelIds = IMPORT_LABELS.map(() => crypto.randomUUID())
  const itemIds: string[] = [''] // by number
  let lines = 0
  let labelled = 0
  let assigned = 0
  const line = (type: string, data: unknown) => {
    writer.write(`${JSON.stringify({ type, data })}\n`)
    lines++
  }
  const start = new Date(BASE_TIME).toISOString()
  line('project', { id: projectId, key, name: 'Imported project', description: null, createdBy: owner.userId, createdAt: start, updatedAt: start })
  IMPORT_LABELS.forEach(([name, color], n) => line('label', { id: labelIds[n], name, color, createdAt: start, updatedAt: start }))
  line('member', { userId: owner.userId, accessLevel: 'owner', user: { id: owner.userId, username: 'bench', displayName: 'Bench', avatarUrl: null }, createdAt: start })
  for (let i = 1; i <= items; i++) {
    const v = workItemValues(i)
    const id = crypto.randomUUID()
    itemIds.push(id)
    if (v.label !== null) labelled++
    if (v.assigned) assigned++
    line('work_item', {
      id,
      projectId,
      number: v.number,
      key: `${key}-${v.number}`,
      title: v.title,
      description: v.description,
      status: v.status,
      priority: v.priority,
      assigneeId: v.assigned ? owner.userId : null,
      dueDate: v.dueDate,
      position: v.position,
      createdBy: owner.userId,
      createdAt: v.at,
      updatedAt: v.at,
      labels: v.label === null ? [] : [{ id: labelIds[v.label], name: IMPORT_LABELS[v.label]![0], color: IMPORT_LABELS[v.label]![1] }],
      fields: {},
    })
    if (i % 10_000 === 0) await writer.flush()
  }
  const entries = Math.floor(items / 10)
  for (let k = 1; k <= entries; k++) {
    const e = entryValues(k)
    line('entry', { id: crypto.randomUUID(), workItemId: itemIds[e.item], kind: e.kind, body: e.body, authorId: owner.userId, position: 0, createdAt: e.at, updatedAt: e.at })
  }
  const relationships = Math.floor(items / 100)
  for (let k = 1; k <= relationships; k++) {
    const r = relationshipValues(k)
    line('relationship', { id: crypto.randomUUID(), projectId, sourceWorkItemId: itemIds[r.source], targetWorkItemId: itemIds[r.target], type: r.type, createdBy: owner.userId, createdAt: r.at, updatedAt: r.at })
  }
  await writer.end()
  return { path, bytes: Bun.file(path).size, lines, items, entries, relationships, labelled, assigned }
}

const csvText = (value: string | null) => (value === null ? '' : `"${value.replace(/"/g, '""')}"`)

/** CSVs (no header) of the same values for the project `projectId` of `org`, one per table, with new ids: work_items, work_item_labels, entries, relationships. */
export async function writeImportCsvs(prefix: string, items: number, org: ImportOrganization, projectId: string): Promise<Record<'work_items' | 'work_item_labels' | 'entries' | 'relationships', string>> {
  const paths = { work_items: `${prefix}-work_items.csv`, work_item_labels: `${prefix}-work_item_labels.csv`, entries: `${prefix}-entries.csv`, relationships: `${prefix}-relationships.csv` }
  const o = org.organizationId
  const u = org.userId
  const ids: string[] = ['']
  const w = Bun.file(paths.work_items).writer({ highWaterMark: 1024 * 1024 })
  const l = Bun.file(paths.work_item_labels).writer()
  for (let i = 1; i <= items; i++) {
    const v = workItemValues(i)
    const id = crypto.randomUUID()
    ids.push(id)
    w.write(`${id},${o},${projectId},${v.number},${csvText(v.title)},${csvText(v.description)},${v.status},${v.priority},${v.assigned ? u : ''},${v.dueDate ?? ''},${v.position},${u},${v.at},${v.at}\n`)
    if (v.label !== null) l.write(`${id},${org.labelIds[v.label]},${o},${projectId}\n`)
    if (i % 10_000 === 0) await w.flush()
  }
  await Promise.all([w.end(), l.end()])
  const e = Bun.file(paths.entries).writer()
  for (let k = 1; k <= Math.floor(items / 10); k++) {
    const v = entryValues(k)
    e.write(`${crypto.randomUUID()},${o},${projectId},${ids[v.item]},${v.kind},${csvText(v.body)},${u},0,${v.at},${v.at}\n`)
  }
  await e.end()
  const r = Bun.file(paths.relationships).writer()
  for (let k = 1; k <= Math.floor(items / 100); k++) {
    const v = relationshipValues(k)
    r.write(`${crypto.randomUUID()},${o},${projectId},${ids[v.source]},${ids[v.target]},${v.type},${u},${v.at},${v.at}\n`)
  }
  await r.end()
  return paths
}
