/**
 * A client generated from the served document works: openapi-typescript turns the document into
 * types, `tsc` checks a small openapi-fetch client against them (and that wrong paths, fields and
 * types are refused), and the same client then calls a running service over HTTP.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import openapiTS, { astToString } from 'openapi-typescript'
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
    me: { status: me.response.status, username: me.data?.data.user.username, scopes: me.data?.data.key.scopes },
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
  files: ['client.ts', 'mistakes.ts'],
}

let api: TestService
let server: Listening
let directory: string
let key: string

beforeAll(async () => {
  api = await startTestService()
  server = listen(api)
  const organization = await api.createOrganization()
  const administrator = await api.createUser(organization, 'administrator', { username: 'typed-admin' })
  key = (await api.createKey(administrator.id, ['teams:read', 'teams:write'])).secret

  const document = (await api.request('GET', '/docs/json')).body
  directory = mkdtempSync(join(tmpdir(), 'typed-client-'))
  // The generated files import openapi-fetch as a project of the user would: from node_modules.
  symlinkSync(join(ROOT, 'node_modules'), join(directory, 'node_modules'), 'dir')
  writeFileSync(join(directory, 'schema.d.ts'), astToString(await openapiTS(document)))
  writeFileSync(join(directory, 'client.ts'), CLIENT)
  writeFileSync(join(directory, 'mistakes.ts'), MISTAKES)
  writeFileSync(join(directory, 'tsconfig.json'), JSON.stringify(TSCONFIG))
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

  test('type-checks, and refuses wrong paths, fields and types', async () => {
    const tsc = Bun.spawn([join(ROOT, 'node_modules/.bin/tsc'), '-p', directory], { cwd: directory, stdout: 'pipe', stderr: 'pipe' })
    const [stdout, stderr, code] = await Promise.all([new Response(tsc.stdout).text(), new Response(tsc.stderr).text(), tsc.exited])
    expect(`${stdout}${stderr}`).toBe('')
    expect(code).toBe(0)
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
})
