/**
 * The response contract check (tests/helpers/contract.ts) can fail: answers that drift from the
 * service's own OpenAPI document are refused, real answers pass.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Contract, ContractViolation, fetchDocument } from '../helpers/contract'
import { startTestService, type TestService } from '../helpers/service'

let api: TestService
let contract: Contract
let key: string
let userId: string

beforeAll(async () => {
  api = await startTestService()
  contract = new Contract(await fetchDocument(api.service.fetch))
  const organization = await api.createOrganization()
  userId = (await api.createUser(organization)).id
  key = (await api.createKey(userId, [])).secret
})
afterAll(() => api.stop())

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => ({ status, headers: new Headers({ 'content-type': 'application/json', ...headers }), text: JSON.stringify(body) })
const envelope = (data: unknown) => ({ data, errors: [], meta: { requestId: 'abcdefgh-1' } })

describe('the response contract', () => {
  test('a real answer passes', async () => {
    const response = await api.service.fetch(new Request('http://localhost/api/v1/users/me', { headers: { authorization: `Bearer ${key}` } }))
    const text = await response.text()
    expect(response.status).toBe(200)
    expect(() => contract.check('GET', '/api/v1/users/me', { status: response.status, headers: response.headers, text })).not.toThrow()
  })

  test('a missing field, an extra type, an undocumented status and an undocumented route are refused', async () => {
    const me = await (await api.service.fetch(new Request('http://localhost/api/v1/users/me', { headers: { authorization: `Bearer ${key}` } }))).json()
    const { email: _email, ...withoutEmail } = me.data.user
    expect(() => contract.check('GET', '/api/v1/users/me', json(200, envelope({ ...me.data, user: withoutEmail })))).toThrow(/must have required property 'email'/)
    expect(() => contract.check('GET', '/api/v1/users/me', json(200, envelope({ ...me.data, key: { ...me.data.key, expiresAt: 12 } })))).toThrow(ContractViolation)
    expect(() => contract.check('GET', '/api/v1/users/me', json(418, envelope(me.data)))).toThrow(/status 418 is not documented/)
    expect(() => contract.check('GET', '/api/v1/nowhere', json(200, envelope(null)))).toThrow(/not in the OpenAPI document/)
    expect(() => contract.check('GET', '/api/v1/users/me', { status: 200, headers: new Headers({ 'content-type': 'text/plain' }), text: 'hi' })).toThrow(ContractViolation)
  })

  test('a display API answer is held to its documented shape and headers', () => {
    expect(() => contract.check('POST', '/api/component', json(400, { message: 'invalidRequest', detail: 'd', field: 'data' }))).not.toThrow()
    expect(() => contract.check('POST', '/api/component', json(400, { data: null, errors: [{ code: 'BAD_REQUEST', message: 'x' }], meta: {} }))).toThrow(ContractViolation)
    expect(() => contract.check('POST', '/api/component', json(200, { message: 'updateSuccess', limitRemaining: 5 }))).toThrow(/required header/)
  })
})
