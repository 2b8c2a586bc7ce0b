/**
 * A client generated from the served document works: openapi-typescript turns the document into
 * types, with the resources named (`components["schemas"]["WorkItem"]`) and enums as unions; `tsc`
 * checks a small openapi-fetch client against them (and that wrong paths, fields and types are
 * refused), and the same client then calls a running service over HTTP.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import openapiTS, { astToString } from 'openapi-typescript'
import { WORK_ITEM_STATUSES } from '../../plugins/work-items/api'
import { listen, type Listening } from '../helpers/http'
import { startTestService, type TestService } from '../helpers/service'

const ROOT = resolve(import.meta.dir, '../..')

/** The client a user of the API would write, typed only by the generated `paths`. */
const CLIENT = `import createClient from 'openapi-fetch'
import type { paths } from './schema'

export async function exercise(baseUrl: string, key: string) {
  const client = createClient<paths>({ baseUrl, headers: { authorization: \`Bearer \${key}\` } })
  const created = await client.POST('/api/v1/teams', { body: { name: 'Platform', description: 'Builds the platform.' } })
  if (!created.data) throw new Error(\`POST /api/v1/teams answered \${created.response.status}\`)
  const teamId: string = created.data.data.id
  const listed = await client.GET('/api/v1/teams', { params: { query: { page: 0, size: 10 } } })
  const one = await client.GET('/api/v1/teams/{teamId}', { params: { path: { teamId } } })
  const me = await client.GET('/api/v1/users/me')
  const missing = await client.GET('/api/v1/teams/{teamId}', { params: { path: { teamId: '00000000-0000-4000-8000-000000000000' } } })
  return {
    created: { status: created.response.status, id: teamId, name: created.data.data.name },
    listed: { status: listed.response.status, names: listed.data?.data.map((team) => team.name), totalItems: listed.data?.meta.totalItems },
    one: { status: one.response.status, id: one.data?.data.id, description: one.data?.data.description },
    me: { status: me.response.status, username: me.data?.data.user.username, scopes: me.data?.data.key?.scopes },
    missing: { status: missing.response.status, code: missing.error?.errors[0]?.code },
  }
}
`

/** Mistakes the generated types must refuse: each \`@ts-expect-error\` fails tsc if it is not one. */
const MISTAKES = `import createClient from 'openapi-fetch'
import type { paths } from './schema'

const client = createClient<paths>({ baseUrl: 'http://localhost' })

export async function mistakes() {
  // @ts-expect-error no such path
  await client.GET('/api/v1/team')
  // @ts-expect-error a team has a name, not a title
  await client.POST('/api/v1/teams', { body: { title: 'Platform' } })
  // @ts-expect-error page is an integer
  await client.GET('/api/v1/teams', { params: { query: { page: 'first' } } })
  // @ts-expect-error the path parameter is teamId
  await client.GET('/api/v1/teams/{teamId}', { params: { path: { id: 'x' } } })
  const me = await client.GET('/api/v1/users/me')
  // @ts-expect-error the field is username
  return me.data?.data.user.userName
}
`

/** The statuses as the generated union spells them. */
const STATUS_UNION = WORK_ITEM_STATUSES.map((status) => `"${status}"`).join(' | ')

/** Work items through the named schemas a user of the client would import. */
const WORK_ITEMS = `import createClient from 'openapi-fetch'
import type { components, paths } from './schema'

type WorkItem = components['schemas']['WorkItem']
type WorkItemCreate = components['schemas']['WorkItemCreate']
type WorkItemPatch = components['schemas']['WorkItemPatch']
type Failure = components['schemas']['Error']

/** Exactly equal types (not merely assignable). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false
export const priorityIsZeroToFour: Equal<WorkItem['priority'], 0 | 1 | 2 | 3 | 4> = true
export const statusIsItsValues: Equal<WorkItem['status'], ${STATUS_UNION}> = true

export async function trackWork(baseUrl: string, key: string) {
  const client = createClient<paths>({ baseUrl, headers: { authorization: \`Bearer \${key}\` } })
  const project = await client.POST('/api/v1/projects', { body: { name: 'Typed' } })
  if (!project.data) throw new Error(\`POST /api/v1/projects answered \${project.response.status}\`)
  const projectId = project.data.data.id
  const draft: WorkItemCreate = { title: 'Ship the typed client', priority: 2, status: 'in_progress' }
  const created = await client.POST('/api/v1/projects/{projectId}/work-items', { params: { path: { projectId } }, body: draft })
  if (!created.data) throw new Error(\`POST …/work-items answered \${created.response.status}\`)
  const item: WorkItem = created.data.data
  const change: WorkItemPatch = { priority: 1 }
  const path = { projectId, workItemId: item.id }
  const updated = await client.PATCH('/api/v1/projects/{projectId}/work-items/{workItemId}', { params: { path }, body: change })
  const read = await client.GET('/api/v1/projects/{projectId}/work-items/{workItemId}', { params: { path } })
  const refused = await client.POST('/api/v1/projects/{projectId}/work-items', { params: { path: { projectId } }, body: { title: '' } })
  const problem: Failure['errors'][number] | undefined = refused.error?.errors[0]
  const priority: 0 | 1 | 2 | 3 | 4 | undefined = read.data?.data.priority
  return {
    created: { status: created.response.status, title: item.title, priority: item.priority, state: item.status },
    updated: { status: updated.response.status, priority: updated.data?.data.priority },
    read: { status: read.response.status, title: read.data?.data.title, priority },
    refused: { status: refused.response.status, field: problem?.field },
  }
}
`

/** What must not compile: a priority outside 0..4, on its own so the failure is this one. */
const WRONG_PRIORITY = `import createClient from 'openapi-fetch'
import type { paths } from './schema'

const client = createClient<paths>({ baseUrl: 'http://localhost' })
export const late = client.POST('/api/v1/projects/{projectId}/work-items', { params: { path: { projectId: 'p' } }, body: { title: 'Late', priority: 7 } })
`

const TSCONFIG = {
  compilerOptions: {
    strict: true,
    noEmit: true,
    target: 'ES2022',
    module: 'ESNext',
    moduleResolution: 'Bundler',
    lib: ['ES2022', 'DOM'],
    types: [],
    skipLibCheck: true,
  },
  files: ['client.ts', 'mistakes.ts', 'work-items.ts'],
}

/** Runs tsc on a project of the directory: its exit code and what it printed. */
async function typeCheck(project: string): Promise<{ code: number; output: string }> {
  const tsc = Bun.spawn([join(ROOT, 'node_modules/.bin/tsc'), '-p', join(directory, project)], { cwd: directory, stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(tsc.stdout).text(), new Response(tsc.stderr).text(), tsc.exited])
  return { code, output: `${stdout}${stderr}` }
}

let api: TestService
let server: Listening
let directory: string
let key: string
let workKey: string

beforeAll(async () => {
  api = await startTestService()
  server = listen(api)
  const organization = await api.createOrganization()
  const administrator = await api.createUser(organization, 'administrator', { username: 'typed-admin' })
  key = (await api.createKey(administrator.id, ['teams:read', 'teams:write'])).secret
  workKey = (await api.createKey(administrator.id, ['projects:write', 'work_items:read', 'work_items:write'])).secret

  const document = (await api.request('GET', '/docs/json')).body
  directory = mkdtempSync(join(tmpdir(), 'typed-client-'))
  // The generated files import openapi-fetch as a project of the user would: from node_modules.
  symlinkSync(join(ROOT, 'node_modules'), join(directory, 'node_modules'), 'dir')
  writeFileSync(join(directory, 'schema.d.ts'), astToString(await openapiTS(document)))
  writeFileSync(join(directory, 'client.ts'), CLIENT)
  writeFileSync(join(directory, 'mistakes.ts'), MISTAKES)
  writeFileSync(join(directory, 'work-items.ts'), WORK_ITEMS)
  writeFileSync(join(directory, 'wrong-priority.ts'), WRONG_PRIORITY)
  writeFileSync(join(directory, 'tsconfig.json'), JSON.stringify(TSCONFIG))
  writeFileSync(join(directory, 'tsconfig.wrong.json'), JSON.stringify({ ...TSCONFIG, files: ['wrong-priority.ts'] }))
})
afterAll(async () => {
  server?.stop()
  if (directory) rmSync(directory, { recursive: true, force: true })
  await api?.stop()
})

describe('a client generated from the OpenAPI document', () => {
  test('names operations and parameters as the document does', async () => {
    const schema = await Bun.file(join(directory, 'schema.d.ts')).text()
    for (const name of ['listTeams: {', 'createTeam: {', 'getCurrentUser: {']) expect(schema).toContain(name)
    expect(schema).toMatch(/page\?: number;/)
  })

  test('names the resources, the bodies and the error envelope, with enums as unions', async () => {
    const schema = await Bun.file(join(directory, 'schema.d.ts')).text()
    const schemas = /\n {4}schemas: \{(\n[\s\S]*?)\n {4}\};/.exec(schema)?.[1] ?? ''
    /** The members of one named schema, as generated. */
    const members = (name: string) => new RegExp(`\\n {8}${name}: \\{\\n([\\s\\S]*?)\\n {8}\\};`).exec(schemas)?.[1]
    for (const name of ['WorkItem', 'WorkItemCreate', 'WorkItemPatch', 'Entry', 'Error']) expect(members(name), name).toBeString()
    expect(members('WorkItem')).toContain('priority: 0 | 1 | 2 | 3 | 4;')
    expect(members('WorkItem')).toContain(`status: ${STATUS_UNION};`)
    expect(members('WorkItemCreate')).toContain('priority?: 0 | 1 | 2 | 3 | 4;')
    expect(members('WorkItemPatch')).toMatch(/\n {12}status\?: ("[a-z_]+" \| )+"[a-z_]+";/)
    // Operations reference them rather than spelling them out again.
    expect(schema).toContain('data: components["schemas"]["WorkItem"];')
    expect(schema).toContain('"application/json": components["schemas"]["WorkItemCreate"];')
    // Generated from a document that names its resources: a few thousand lines, not twenty thousand.
    expect(schema.split('\n').length).toBeLessThan(12_000)
  })

  test('type-checks, and refuses wrong paths, fields and types', async () => {
    expect(await typeCheck('tsconfig.json')).toEqual({ code: 0, output: '' })
  })

  test('refuses a work item priority outside 0..4', async () => {
    const { code, output } = await typeCheck('tsconfig.wrong.json')
    expect(code).not.toBe(0)
    const errors = output.split('\n').filter((line) => line.includes('error TS'))
    expect(errors).toHaveLength(1)
    expect(errors[0]).toStartWith('wrong-priority.ts(5,')
    expect(output).toContain('Type \'7\' is not assignable to type \'0 | 1 | 2 | 3 | 4')
  })

  test('creates a team, lists teams and reads the current user over HTTP', async () => {
    const { exercise } = await import(join(directory, 'client.ts'))
    const result = await exercise(server.url, key)
    expect(result.created).toMatchObject({ status: 201, name: 'Platform' })
    expect(result.listed).toEqual({ status: 200, names: ['Platform'], totalItems: 1 })
    expect(result.one).toEqual({ status: 200, id: result.created.id, description: 'Builds the platform.' })
    expect(result.me).toEqual({ status: 200, username: 'typed-admin', scopes: ['teams:read', 'teams:write'] })
    expect(result.missing).toEqual({ status: 404, code: 'NOT_FOUND' })
  })

  test('creates, changes and reads a work item through the named types', async () => {
    const { trackWork } = await import(join(directory, 'work-items.ts'))
    expect(await trackWork(server.url, workKey)).toEqual({
      created: { status: 201, title: 'Ship the typed client', priority: 2, state: 'in_progress' },
      updated: { status: 200, priority: 1 },
      read: { status: 200, title: 'Ship the typed client', priority: 1 },
      refused: { status: 400, field: 'title' },
    })
  })
})
