/**
 * A path that exists under other methods answers 405 with `Allow` and the error envelope, not 404:
 * for every path of the OpenAPI document, each method it does not serve. Paths that do not exist
 * stay 404, and a request's credentials or existence of resources are not consulted first.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let paths: Record<string, Record<string, unknown>>
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']

beforeAll(async () => {
  api = await startTestService()
  paths = (await api.request('GET', '/docs/json')).body.paths
})
afterAll(() => api.stop())

const concrete = (template: string) => template.replace(/\{\w+\}/g, '00000000-0000-4000-8000-000000000000')
/** Whether another documented path serves `method` at `path` (`GET …/work-items/bulk` is `GET …/work-items/{workItemId}`). */
const servedElsewhere = (method: string, path: string) =>
  Object.entries(paths).some(([template, operations]) => method.toLowerCase() in operations && new RegExp(`^${template.replace(/\{\w+\}/g, '[^/]+')}$`).test(path))

test('every documented path answers a method it does not serve with 405, the envelope and Allow listing what it serves', async () => {
  let checked = 0
  for (const [template, operations] of Object.entries(paths)) {
    const served = Object.keys(operations).map((method) => method.toUpperCase())
    for (const method of METHODS.filter((method) => !served.includes(method) && !servedElsewhere(method, concrete(template)))) {
      const response = await api.request(method, concrete(template), { unchecked: true, ...(method === 'GET' || method === 'DELETE' ? {} : { body: {} }) })
      expect(`${method} ${template}: ${response.status}`).toBe(`${method} ${template}: 405`)
      const allow = response.headers.get('allow')!.split(', ')
      for (const method of served) expect(allow).toContain(method)
      if (served.includes('GET')) expect(allow).toContain('HEAD')
      expect(allow).not.toContain(method)
      expect(response.body).toMatchObject({ data: null, errors: [{ code: 'METHOD_NOT_ALLOWED' }] })
      expect(response.body.errors[0].message).toContain(served[0])
      checked++
    }
  }
  expect(checked).toBeGreaterThan(100)
})

test('a path that exists under no method stays 404; a served method on a missing resource stays 404', async () => {
  const nowhere = await api.request('DELETE', '/api/v1/nothing-here', { unchecked: true })
  expect(nowhere.status).toBe(404)
  expect(nowhere.headers.get('allow')).toBeNull()
  const organization = await api.createOrganization()
  const user = await api.createUser(organization, 'administrator')
  const key = (await api.createKey(user.id, ['projects:read'])).secret
  const missing = await api.request('GET', `/api/v1/projects/${crypto.randomUUID()}`, { key, unchecked: true })
  expect(missing.status).toBe(404)
  expect(missing.headers.get('allow')).toBeNull()
})
