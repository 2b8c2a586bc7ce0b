/** A project with an owner, an editor and a viewer, each holding a key with every scope. */
import type { TestResponse, TestService, TestUser } from './service'

export interface ProjectFixture {
  projectId: string
  organizationId: string
  users: { owner: TestUser; editor: TestUser; viewer: TestUser }
  keys: { owner: string; editor: string; viewer: string }
  /** Sends a request as one of the three and expects `status` (default: any 2xx); returns `data`. */
  as(who: 'owner' | 'editor' | 'viewer', method: string, path: string, body?: unknown, status?: number): Promise<any>
  call(who: 'owner' | 'editor' | 'viewer', method: string, path: string, body?: unknown): Promise<TestResponse>
}

export async function createProjectFixture(api: TestService, organizationId?: string): Promise<ProjectFixture> {
  const organization = organizationId ?? (await api.createOrganization())
  const scopes = api.service.core.scopes.map((scope) => scope.name)
  const users = {
    owner: await api.createUser(organization),
    editor: await api.createUser(organization),
    viewer: await api.createUser(organization),
  }
  const keys = {
    owner: (await api.createKey(users.owner.id, scopes)).secret,
    editor: (await api.createKey(users.editor.id, scopes)).secret,
    viewer: (await api.createKey(users.viewer.id, scopes)).secret,
  }
  const call = (who: keyof typeof keys, method: string, path: string, body?: unknown) => api.request(method, path, { key: keys[who], body })
  const as = async (who: keyof typeof keys, method: string, path: string, body?: unknown, status?: number) => {
    const response = await call(who, method, path, body)
    if (status !== undefined ? response.status !== status : response.status >= 300)
      throw new Error(`${method} ${path} as ${who}: expected ${status ?? '2xx'}, got ${response.status} ${response.text}`)
    return response.body.data
  }
  const project = await as('owner', 'POST', '/api/v1/projects', { name: 'Fixture' })
  await as('owner', 'POST', `/api/v1/projects/${project.id}/members`, { userId: users.editor.id, accessLevel: 'editor' })
  await as('owner', 'POST', `/api/v1/projects/${project.id}/members`, { userId: users.viewer.id, accessLevel: 'viewer' })
  return { projectId: project.id, organizationId: organization, users, keys, as, call }
}

/**
 * An administrator of the fixture's organization holding every scope, and a POST as them that
 * must answer 201 (organization-wide set-up: labels, custom fields); returns `data`.
 */
export async function administratorOf(api: TestService, fx: ProjectFixture): Promise<{ userId: string; key: string; create(path: string, body: unknown): Promise<any> }> {
  const scopes = api.service.core.scopes.map((scope) => scope.name)
  const userId = (await api.createUser(fx.organizationId, 'administrator')).id
  const key = (await api.createKey(userId, scopes)).secret
  const create = async (path: string, body: unknown) => {
    const response = await api.request('POST', path, { key, body })
    if (response.status !== 201) throw new Error(`${path}: ${response.status} ${response.text}`)
    return response.body.data
  }
  return { userId, key, create }
}
