/**
 * Three service processes on one fresh PostgreSQL database, a fake FCM they all deliver to, and
 * the fixtures the scale-out test drives. An in-process service on the same database (running no
 * push workers) makes users and keys; everything else goes through the instances' HTTP APIs.
 */
import { setDailyLimit } from '../../plugins/display/calls/accounts'
import { createTestDatabase, type TestDatabase } from '../helpers/database'
import { startFakeFcm, type FakeFcm } from '../helpers/fake-fcm'
import { startInstance, type Instance } from '../helpers/instance'
import { startTestService, type TestService, type TestUser } from '../helpers/service'

export const INSTANCE_CONFIG = {
  // Keys stay cached for minutes: only the revocation notice can make an instance refuse one sooner.
  auth: { passwordHashLogN: 10, keyCacheTtlSeconds: 300 },
  // Three instances, the seed service and the test's own handle share the server with other test files.
  database: { maxConnections: 6 },
  push: { concurrency: 2, batchSize: 4, pollIntervalMs: 200, retryBaseMs: 100 },
}

export interface Cluster {
  database: TestDatabase
  seed: TestService
  fcm: FakeFcm
  instances: Instance[]
  stop(): Promise<void>
}

export async function startCluster(size: number): Promise<Cluster> {
  const fcm = await startFakeFcm()
  const database = await createTestDatabase()
  // All start together: migrations run once, under the advisory lock, whoever comes first.
  const [seeded, ...started] = await Promise.allSettled([
    startTestService({ database, config: { push: { workers: false } } }),
    ...Array.from({ length: size }, (_, i) => startInstance({ name: `i${i}`, databaseUrl: database.url, config: INSTANCE_CONFIG, fcm: { port: fcm.port, ca: fcm.ca } })),
  ])
  const seed = seeded.status === 'fulfilled' ? seeded.value : undefined
  const instances = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value as Instance] : []))
  const stop = async () => {
    await Promise.all(instances.map((instance) => instance.stop()))
    await seed?.stop()
    await database.close()
    await fcm.close()
  }
  const failed = [seeded, ...started].find((result) => result.status === 'rejected')
  if (failed) {
    await stop()
    throw (failed as PromiseRejectedResult).reason
  }
  return { database, seed: seed!, fcm, instances, stop }
}

/** One HTTP exchange with an instance, its body parsed when JSON. */
export interface Exchange {
  status: number
  headers: Headers
  body: any
  text: string
  ms: number
}

export async function call(instance: Instance, method: string, path: string, options: { bearer?: string; body?: unknown; cookie?: string } = {}): Promise<Exchange> {
  const headers: Record<string, string> = {}
  if (options.bearer) headers.authorization = `Bearer ${options.bearer}`
  if (options.cookie) headers.cookie = options.cookie
  if (options.body !== undefined) headers['content-type'] = 'application/json'
  const started = performance.now()
  const response = await fetch(`${instance.url}${path}`, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) })
  const text = await response.text()
  let body: any = text
  try {
    body = JSON.parse(text)
  } catch {
    // plain text (POST /api/message)
  }
  return { status: response.status, headers: response.headers, body, text, ms: performance.now() - started }
}

/** `call` that fails with the exchange when the status is not `expected`. */
export async function expectCall(instance: Instance, expected: number, method: string, path: string, options: Parameters<typeof call>[3] = {}): Promise<Exchange> {
  const exchange = await call(instance, method, path, options)
  if (exchange.status !== expected) throw new Error(`${instance.name} ${method} ${path}: expected ${expected}, got ${exchange.status} ${exchange.text.slice(0, 500)}`)
  return exchange
}

/** Signs in through an instance's account JSON API; returns the mobile session token. */
export async function signIn(instance: Instance, user: TestUser): Promise<string> {
  return (await expectCall(instance, 201, 'POST', '/account/api/sessions', { body: { email: user.email, password: user.password } })).body.data.token
}

export interface Fixtures {
  /** A project with an editor and a viewer, each holding a key with every scope (the mixed load). */
  project: { projectId: string; organizationId: string; editorKey: string; viewerKey: string }
  /** A dashboard page: its creator, three readers on its access list, two components. */
  display: {
    organizationId: string
    creator: TestUser
    readers: TestUser[]
    creatorKey: string
    pageId: string
    pageName: string
    components: { horizontalBox: string; verticalBox: string }
  }
  /** A user whose display account has `limit` calls a day, with a page and a bar chart of their own. */
  limiter: { user: TestUser; pageName: string; componentId: string; limit: number }
  /** Users whose key and session the test revokes or deactivates. */
  revokee: TestUser
  leaver: TestUser
}

/**
 * Users and keys come from the seed service's functions (what the operator CLI does); pages,
 * components, access and projects are made through the instances' HTTP APIs, spread over them.
 */
export async function seedFixtures(cluster: Cluster, limit: number): Promise<Fixtures> {
  const { seed } = cluster
  const [a, b, c] = cluster.instances as [Instance, Instance, Instance]
  const scopes = seed.service.core.scopes.map((scope) => scope.name)
  const dashboards = ['dashboards:read', 'dashboards:write']

  const projectOrganization = await seed.createOrganization()
  const owner = await seed.createUser(projectOrganization)
  const editor = await seed.createUser(projectOrganization)
  const viewer = await seed.createUser(projectOrganization)
  const ownerKey = (await seed.createKey(owner.id, scopes)).secret
  const editorKey = (await seed.createKey(editor.id, scopes)).secret
  const viewerKey = (await seed.createKey(viewer.id, scopes)).secret
  const projectId = (await expectCall(a, 201, 'POST', '/api/v1/projects', { bearer: ownerKey, body: { name: 'Scale' } })).body.data.id
  await expectCall(b, 201, 'POST', `/api/v1/projects/${projectId}/members`, { bearer: ownerKey, body: { userId: editor.id, accessLevel: 'editor' } })
  await expectCall(c, 201, 'POST', `/api/v1/projects/${projectId}/members`, { bearer: ownerKey, body: { userId: viewer.id, accessLevel: 'viewer' } })

  const displayOrganization = await seed.createOrganization()
  const creator = await seed.createUser(displayOrganization, 'member', { password: 'creator password' })
  const creatorKey = (await seed.createKey(creator.id, dashboards)).secret
  const pageName = 'scale-board'
  const pageId = (await expectCall(a, 201, 'POST', '/api/v1/pages', { bearer: creatorKey, body: { name: pageName, title: 'Scale' } })).body.data.id
  const readers: TestUser[] = []
  for (let i = 0; i < 3; i++) {
    const reader = await seed.createUser(displayOrganization, 'member', { password: `reader ${i} password` })
    await expectCall(cluster.instances[i % 3]!, 201, 'POST', `/api/v1/pages/${pageId}/access`, { bearer: creatorKey, body: { userId: reader.id } })
    readers.push(reader)
  }
  const component = async (instance: Instance, key: string, page: string, type: string) =>
    (await expectCall(instance, 201, 'POST', `/api/v1/pages/${page}/components`, { bearer: key, body: { type, title: type } })).body.data.id as string
  const components = { horizontalBox: await component(b, creatorKey, pageId, 'horizontalBox'), verticalBox: await component(c, creatorKey, pageId, 'verticalBox') }

  const limiter = await seed.createUser(displayOrganization, 'member', { password: 'limiter password' })
  const limiterKey = (await seed.createKey(limiter.id, dashboards)).secret
  const limiterPage = (await expectCall(b, 201, 'POST', '/api/v1/pages', { bearer: limiterKey, body: { name: 'scale-limits' } })).body.data.id
  const limiterComponent = await component(c, limiterKey, limiterPage, 'barChart')
  await setDailyLimit(seed.service.core.db, limiter.id, limit)

  return {
    project: { projectId, organizationId: projectOrganization, editorKey, viewerKey },
    display: { organizationId: displayOrganization, creator, readers, creatorKey, pageId, pageName, components },
    limiter: { user: limiter, pageName: 'scale-limits', componentId: limiterComponent, limit },
    revokee: await seed.createUser(projectOrganization, 'member', { password: 'revokee password' }),
    leaver: await seed.createUser(projectOrganization, 'member', { password: 'leaver password' }),
  }
}
