/**
 * A request body field that refers to something by id is 400 BAD_REQUEST naming that field by its
 * JSON path (`labels[1]`, `items[1].id`, `mutedPageIds[1]`) when the id is unknown, invisible to
 * the caller, or in another organization or project; 404 is for what the path names (docs/api.md, "Errors").
 * The refused request writes nothing: no row of any table changes and no audit record is added.
 *
 * The fields are read from the served OpenAPI document, so an id field added to a request body
 * fails the first test here until it has a case below (or a reasoned exception).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { queryText } from '../../src/db'
import { fetchDocument } from '../helpers/contract'
import { startTestService, type TestService, type TestUser } from '../helpers/service'

type Json = Record<string, any>

/** A property name that says it holds an id (`userId`, `mutedPageIds`, an item's `id`). */
const ID_NAME = /(^id|Id|Ids)$/
const UUID_PATTERN = '[0-9a-fA-F]{8}-'

/**
 * Every place in a JSON request body that holds an id, as `METHOD path field`: a string that is a
 * UUID (by format or pattern) or whose property says it is an id. In `field`, `[]` stands for an
 * array's items and `*` for an object's values under any key.
 */
function referenceFields(document: Json): string[] {
  const resolve = (schema: Json): Json => (schema?.$ref ? resolve(schema.$ref.split('/').slice(1).reduce((node: Json, key: string) => node[key], document)) : schema)
  const found = new Set<string>()
  const walk = (raw: Json, operation: string, field: string, named: boolean) => {
    const schema = resolve(raw)
    if (!schema || typeof schema !== 'object') return
    for (const branch of [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])]) walk(branch, operation, field, named)
    const uuid = schema.format === 'uuid' || String(schema.pattern ?? '').includes(UUID_PATTERN)
    if (schema.type === 'string' && (named || uuid)) found.add(`${operation} ${field}`)
    for (const [name, property] of Object.entries<Json>(schema.properties ?? {})) walk(property, operation, field ? `${field}.${name}` : name, ID_NAME.test(name))
    if (schema.items) walk(schema.items, operation, `${field}[]`, named)
    for (const value of Object.values<Json>(schema.patternProperties ?? {})) walk(value, operation, `${field}.*`, false)
    if (typeof schema.additionalProperties === 'object') walk(schema.additionalProperties, operation, `${field}.*`, false)
  }
  for (const [path, operations] of Object.entries<Json>(document.paths))
    for (const [method, operation] of Object.entries<Json>(operations)) {
      const schema = operation?.requestBody?.content?.['application/json']?.schema
      if (schema) walk(schema, `${method.toUpperCase()} ${path}`, '', false)
    }
  return [...found].sort()
}

interface Organization {
  id: string
  admin: TestUser
  member: TestUser
  deactivated: TestUser
  keys: { admin: string; member: string }
  project: Json
  otherProject: Json
  /** A project of the member's that the administrator cannot see (an administrator is not owner of every project). */
  hiddenProject: Json
  item: Json
  secondItem: Json
  elsewhereItem: Json
  entry: Json
  secondEntry: Json
  label: Json
  team: Json
  /** Single selects: `stage` (a path names it), `tier` (another field); `owner`, a user field enabled for the project. */
  stage: Json
  tier: Json
  /** The administrator's page, which the member cannot see, and the member's own. */
  page: Json
  memberPage: Json
  /** A box on the administrator's page, and shared views of the main and the other project. */
  component: Json
  view: Json
  otherView: Json
}

let api: TestService
let ours: Organization
let theirs: Organization

async function organization(name: string): Promise<Organization> {
  const id = await api.createOrganization(name)
  const scopes = api.service.core.scopes.map((scope) => scope.name)
  const admin = await api.createUser(id, 'administrator')
  const member = await api.createUser(id, 'member')
  const deactivated = await api.createUser(id, 'member')
  await api.deactivateUser(deactivated.id)
  const keys = { admin: (await api.createKey(admin.id, scopes)).secret, member: (await api.createKey(member.id, scopes)).secret }
  const as = async (who: keyof typeof keys, method: string, path: string, body: unknown) => {
    const response = await api.request(method, path, { key: keys[who], body })
    if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${response.text}`)
    return response.body.data
  }
  const project = await as('admin', 'POST', '/api/v1/projects', { name: 'Main' })
  const otherProject = await as('admin', 'POST', '/api/v1/projects', { name: 'Other' })
  const hiddenProject = await as('member', 'POST', '/api/v1/projects', { name: 'Hidden' })
  const items = `/api/v1/projects/${project.id}/work-items`
  const item = await as('admin', 'POST', items, { title: 'First' })
  const secondItem = await as('admin', 'POST', items, { title: 'Second' })
  const elsewhereItem = await as('admin', 'POST', `/api/v1/projects/${otherProject.id}/work-items`, { title: 'Elsewhere' })
  const entry = await as('admin', 'POST', `/api/v1/work-items/${item.id}/entries`, { body: 'On the first' })
  const secondEntry = await as('admin', 'POST', `/api/v1/work-items/${secondItem.id}/entries`, { body: 'On the second' })
  const label = await as('admin', 'POST', '/api/v1/labels', { name: 'Bug' })
  const team = await as('admin', 'POST', '/api/v1/teams', { name: 'Core' })
  const stage = await as('admin', 'POST', '/api/v1/custom-fields', { key: 'stage', name: 'Stage', type: 'single_select', options: [{ name: 'New' }] })
  const tier = await as('admin', 'POST', '/api/v1/custom-fields', { key: 'tier', name: 'Tier', type: 'single_select', options: [{ name: 'Gold' }] })
  const owner = await as('admin', 'POST', '/api/v1/custom-fields', { key: 'owner', name: 'Owner', type: 'user' })
  await as('admin', 'POST', `/api/v1/projects/${project.id}/custom-fields`, { fieldId: owner.id })
  const page = await as('admin', 'POST', '/api/v1/pages', { name: 'admin-board' })
  const memberPage = await as('member', 'POST', '/api/v1/pages', { name: 'member-board' })
  const component = await as('admin', 'POST', `/api/v1/pages/${page.id}/components`, { type: 'horizontalBox', title: 'Open' })
  const view = await as('admin', 'POST', `/api/v1/projects/${project.id}/views`, { name: 'Open', filters: { status: 'todo' }, shared: true })
  const otherView = await as('admin', 'POST', `/api/v1/projects/${otherProject.id}/views`, { name: 'Open', filters: { status: 'todo' }, shared: true })
  return { id, admin, member, deactivated, keys, project, otherProject, hiddenProject, item, secondItem, elsewhereItem, entry, secondEntry, label, team, stage, tier, page, memberPage, component, view, otherView }
}

beforeAll(async () => {
  api = await startTestService({ config: { webhooks: { allowPrivateTargets: true, workers: false } } })
  ours = await organization('Ours')
  theirs = await organization('Theirs')
}, 120_000)
afterAll(() => api.stop())

interface Probe {
  body: unknown
  /** The JSON path the 400 must name. */
  field: string
}

interface Case {
  /** Who sends it: our administrator (default; owner of our projects) or our member. */
  as?: 'admin' | 'member'
  /** The body with `id` in the field (after a valid reference where the field is a list, to show the index is named). */
  probe(id: string): Probe
  /** Ids the field must refuse besides an unknown one, by what they are. */
  refused(): Record<string, string>
}

/** Users of the organization are organization-wide: no project scopes them, so another organization's is the foreign one. */
const users = () => ({ "another organization's user": theirs.admin.id, 'a deactivated user of the organization': ours.deactivated.id })
/** Work items are the path's project's: another project's is as foreign as another organization's. */
const workItems = () => ({ "another project's work item": ours.elsewhereItem.id, "another organization's work item": theirs.item.id })
const labels = () => ({ "another organization's label (labels are organization-wide)": theirs.label.id })
const teams = () => ({ "another organization's team (teams are organization-wide)": theirs.team.id })

const CASES: Record<string, Case> = {
  'POST /api/v1/teams/{teamId}/members userId': { probe: (id) => ({ body: { userId: id }, field: 'userId' }), refused: users },
  'POST /api/v1/projects/{projectId}/members userId': { probe: (id) => ({ body: { userId: id, accessLevel: 'viewer' }, field: 'userId' }), refused: users },
  'POST /api/v1/projects/{projectId}/teams teamId': { probe: (id) => ({ body: { teamId: id, accessLevel: 'viewer' }, field: 'teamId' }), refused: teams },
  'POST /api/v1/projects/{projectId}/work-items assigneeId': { probe: (id) => ({ body: { title: 'New', assigneeId: id }, field: 'assigneeId' }), refused: users },
  'POST /api/v1/projects/{projectId}/work-items labels[]': { probe: (id) => ({ body: { title: 'New', labels: [ours.label.id, id] }, field: 'labels[1]' }), refused: labels },
  'PATCH /api/v1/projects/{projectId}/work-items/{workItemId} assigneeId': { probe: (id) => ({ body: { title: 'Changed', assigneeId: id }, field: 'assigneeId' }), refused: users },
  'PATCH /api/v1/projects/{projectId}/work-items/{workItemId} labels[]': {
    probe: (id) => ({ body: { title: 'Changed', labels: [ours.label.id, id] }, field: 'labels[1]' }),
    refused: labels,
  },
  // The same PATCH with the work item named by itself (its id here; its key takes the same path).
  'PATCH /api/v1/work-items/{workItemId} assigneeId': { probe: (id) => ({ body: { title: 'Changed', assigneeId: id }, field: 'assigneeId' }), refused: users },
  'PATCH /api/v1/work-items/{workItemId} labels[]': { probe: (id) => ({ body: { title: 'Changed', labels: [ours.label.id, id] }, field: 'labels[1]' }), refused: labels },
  // Bulk: an earlier item is written in the transaction first, so a refusal must roll it back.
  'POST /api/v1/projects/{projectId}/work-items/bulk items[].assigneeId': {
    probe: (id) => ({ body: { items: [{ title: 'Fine' }, { title: 'New', assigneeId: id }] }, field: 'items[1].assigneeId' }),
    refused: users,
  },
  'POST /api/v1/projects/{projectId}/work-items/bulk items[].labels[]': {
    probe: (id) => ({ body: { items: [{ title: 'Fine' }, { title: 'New', labels: [ours.label.id, id] }] }, field: 'items[1].labels[1]' }),
    refused: labels,
  },
  'PATCH /api/v1/projects/{projectId}/work-items/bulk items[].id': {
    probe: (id) => ({ body: { items: [{ id: ours.item.id, title: 'Changed' }, { id, title: 'Changed' }] }, field: 'items[1].id' }),
    refused: workItems,
  },
  'PATCH /api/v1/projects/{projectId}/work-items/bulk items[].assigneeId': {
    probe: (id) => ({ body: { items: [{ id: ours.item.id, title: 'Changed' }, { id: ours.secondItem.id, assigneeId: id }] }, field: 'items[1].assigneeId' }),
    refused: users,
  },
  'PATCH /api/v1/projects/{projectId}/work-items/bulk items[].labels[]': {
    probe: (id) => ({ body: { items: [{ id: ours.item.id, title: 'Changed' }, { id: ours.secondItem.id, labels: [ours.label.id, id] }] }, field: 'items[1].labels[1]' }),
    refused: labels,
  },
  // An option id keeps an existing option of the field the request defines or changes; any other is foreign.
  'POST /api/v1/custom-fields options[].id': {
    probe: (id) => ({ body: { key: 'fresh', name: 'Fresh', type: 'single_select', options: [{ name: 'One' }, { id, name: 'Two' }] }, field: 'options[1].id' }),
    refused: () => ({ "another field's option": ours.stage.options[0].id, "another organization's option": theirs.stage.options[0].id }),
  },
  'PATCH /api/v1/custom-fields/{fieldId} options[].id': {
    probe: (id) => ({ body: { options: [{ id: ours.stage.options[0].id, name: 'Renamed' }, { id, name: 'Two' }] }, field: 'options[1].id' }),
    refused: () => ({ "another field's option": ours.tier.options[0].id, "another organization's option": theirs.stage.options[0].id }),
  },
  'POST /api/v1/projects/{projectId}/custom-fields fieldId': {
    probe: (id) => ({ body: { fieldId: id }, field: 'fieldId' }),
    refused: () => ({ "another organization's field (definitions are organization-wide)": theirs.stage.id }),
  },
  'POST /api/v1/projects/{projectId}/relationships sourceWorkItemId': {
    probe: (id) => ({ body: { sourceWorkItemId: id, targetWorkItemId: ours.item.id, type: 'blocks' }, field: 'sourceWorkItemId' }),
    refused: workItems,
  },
  'POST /api/v1/projects/{projectId}/relationships targetWorkItemId': {
    probe: (id) => ({ body: { sourceWorkItemId: ours.item.id, targetWorkItemId: id, type: 'blocks' }, field: 'targetWorkItemId' }),
    refused: workItems,
  },
  'PUT /api/v1/projects/{projectId}/content-order workItems[]': { probe: (id) => ({ body: { workItems: [ours.item.id, id] }, field: 'workItems[1]' }), refused: workItems },
  'PUT /api/v1/projects/{projectId}/content-order entries.*[]': {
    probe: (id) => ({ body: { entries: { [ours.item.id]: [ours.entry.id, id] } }, field: `entries.${ours.item.id}[1]` }),
    refused: () => ({ "another work item's entry": ours.secondEntry.id, "another organization's entry": theirs.entry.id }),
  },
  'POST /api/v1/pages/{pageId}/access userId': { probe: (id) => ({ body: { userId: id }, field: 'userId' }), refused: users },
  'POST /api/v1/pages/{pageId}/access teamId': { probe: (id) => ({ body: { teamId: id }, field: 'teamId' }), refused: teams },
  'PUT /api/v1/users/me/notifications mutedPageIds[]': {
    as: 'member',
    probe: (id) => ({ body: { quietHours: null, mutedPageIds: [ours.memberPage.id, id] }, field: 'mutedPageIds[1]' }),
    refused: () => ({ "another organization's page": theirs.page.id, 'a page of the organization the caller cannot see': ours.page.id }),
  },
  'POST /api/v1/notifications/mark-read projectId': {
    probe: (id) => ({ body: { projectId: id }, field: 'projectId' }),
    refused: () => ({ "another organization's project": theirs.project.id, 'a project of the organization the caller cannot see': ours.hiddenProject.id }),
  },
  'PUT /api/v1/pages/{pageId}/components/{componentId}/source projectId': {
    probe: (id) => ({ body: { projectId: id, measure: 'count' }, field: 'projectId' }),
    refused: () => ({ "another organization's project": theirs.project.id, 'a project of the organization the caller cannot see': ours.hiddenProject.id }),
  },
  'PUT /api/v1/pages/{pageId}/components/{componentId}/source viewId': {
    probe: (id) => ({ body: { projectId: ours.project.id, viewId: id, measure: 'count' }, field: 'viewId' }),
    refused: () => ({ "another project's view": ours.otherView.id, "another organization's view": theirs.view.id }),
  },
  'POST /api/v1/webhooks projectId': {
    probe: (id) => ({ body: { url: 'http://127.0.0.1:9/hook', events: ['work_item.created'], projectId: id }, field: 'projectId' }),
    refused: () => ({ "another organization's project": theirs.project.id, 'a project of the organization the caller cannot see': ours.hiddenProject.id }),
  },
}

/**
 * Ids in bodies the document cannot show as ids: a custom field's value is typed by the
 * organization's definitions (`fields` is an object of any values there), and content order's
 * `entries` is keyed by work item ids (a JSON Schema key pattern, not a type).
 */
const UNDOCUMENTED: Record<string, Case> = {
  'POST /api/v1/projects/{projectId}/work-items fields.owner': { probe: (id) => ({ body: { title: 'New', fields: { owner: id } }, field: 'fields.owner' }), refused: users },
  'PATCH /api/v1/projects/{projectId}/work-items/{workItemId} fields.owner': { probe: (id) => ({ body: { title: 'Changed', fields: { owner: id } }, field: 'fields.owner' }), refused: users },
  'PATCH /api/v1/work-items/{workItemId} fields.owner': { probe: (id) => ({ body: { title: 'Changed', fields: { owner: id } }, field: 'fields.owner' }), refused: users },
  'PUT /api/v1/projects/{projectId}/content-order entries.{workItemId}': { probe: (id) => ({ body: { entries: { [id]: [] } }, field: `entries.${id}` }), refused: workItems },
}

/**
 * Id fields of the display API, which is not API v1: its calls name their target in the body, as
 * API v1 does in the path, and the specification answers a missing target 404.
 */
const EXCEPTIONS: Record<string, string> = {
  'POST /api/component componentId': 'the component the call writes; an unknown or inaccessible one is 404 componentNotFound (docs/display.md)',
  'POST /api/devices/receipts messageId': 'the message the receipt is about; one not sent to the user is 404 (docs/display.md)',
}

/** The path with our organization's ids for its parameters. */
function pathOf(template: string): string {
  const ids: Record<string, string> = { projectId: ours.project.id, workItemId: ours.item.id, teamId: ours.team.id, fieldId: ours.stage.id, pageId: ours.page.id, componentId: ours.component.id }
  return template.replace(/\{(\w+)\}/g, (_, name: string) => ids[name] ?? `{${name}}`)
}

/**
 * A digest of every table's rows, audit records included: equal before and after a request that
 * wrote nothing. Tables written beside a request's unit of work (a key's or session's last use,
 * sign-in throttling) are left out.
 */
async function snapshot(): Promise<Record<string, string>> {
  const db = api.service.core.db
  const tables = await queryText<{ name: string }>(
    db,
    `select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'
      and table_name not in ('api_keys', 'sessions', 'sign_in_throttle') order by table_name`,
    [],
  )
  const digests = tables.map(({ name }) => `select '${name}' as name, (select md5(coalesce(string_agg(t::text, '|' order by t::text), '')) from "${name}" t) as digest`)
  const rows = await queryText<{ name: string; digest: string }>(db, digests.join(' union all '), [])
  return Object.fromEntries(rows.map((row) => [row.name, row.digest]))
}

/** What one refused request did wrong: its answer when not the 400 naming the field, the tables it changed. */
async function misanswered(method: string, template: string, reference: Case, what: string, id: string) {
  const { body, field } = reference.probe(id)
  const before = await snapshot()
  const response = await api.request(method, pathOf(template), { key: ours.keys[reference.as ?? 'admin'], body })
  const after = await snapshot()
  const errors = response.body?.errors ?? []
  const named = response.status === 400 && errors.length === 1 && errors[0].code === 'BAD_REQUEST' && errors[0].field === field
  const changed = Object.keys(after).filter((table) => after[table] !== before[table])
  return named && !changed.length ? [] : [{ request: `${method} ${template} ${field}`, what, status: response.status, errors, changed }]
}

describe('references in request bodies', () => {
  test('every id field of a request body refuses an unknown, invisible or foreign id with 400 naming the field, and writes nothing', async () => {
    // Every id field the document shows has a case or an exception, and each of those is still documented.
    const documented = referenceFields(await fetchDocument(api.service.fetch))
    const known = [...Object.keys(CASES), ...Object.keys(EXCEPTIONS)].sort()
    expect(documented.filter((field) => !known.includes(field))).toEqual([])
    expect(known.filter((field) => !documented.includes(field))).toEqual([])

    const wrong: unknown[] = []
    for (const [name, reference] of [...Object.entries(CASES), ...Object.entries(UNDOCUMENTED)]) {
      const [method, template] = name.split(' ') as [string, string]
      for (const [what, id] of Object.entries({ 'an unknown id': crypto.randomUUID(), ...reference.refused() })) wrong.push(...(await misanswered(method, template, reference, what, id)))
    }
    expect(wrong).toEqual([])
    // About 80 refused requests, each with a digest of every table before and after: on a Citus
    // cluster each digest reads every shard, ~0.8 s under CI's load.
  }, 300_000)
})
