/**
 * The root of the service: opens the database, applies migrations, sets up the enabled plugins
 * in dependency order and mounts their routes behind the shared request id, body parser and
 * error mapping.
 */
import { randomUUID } from 'node:crypto'
import { Elysia, t } from 'elysia'
import type { ServiceConfig } from './config'
import { openDatabase, type DatabaseHandle } from './db'
import { createChangeFeed } from './changes'
import { createEventBus } from './events'
import { parseRequestBody } from './http/body'
import { clientAddress, isSecureRequest, rememberConnection, trustedHops, type ConnectionInfo } from './http/client'
import { errorEnvelope } from './http/answer'
import { purgeIdempotencyKeys } from './http/idempotency'
import { mapError } from './http/error-mapper'
import { allowedMethods } from './http/methods'
import { methodNotAllowed } from './http/errors'
import { assignRequestId, requestIdOf } from './http/request-id'
import { createRequestObserver, routeMarking } from './http/access-log'
import { metricsRoutes, ServiceMetrics } from './metrics'
import { createOutboxes } from './outbox-runner'
import { createCors, type Cors } from './http/cors'
import { createLanding, faviconResponse } from './http/landing'
import { PAGE_CSS_PATH, pageCssResponse } from './http/page-style'
import { createV1Kit } from './http/v1'
import { resolvePlugins } from './loader'
import { createLogger, describeError, routeOf, type Logger } from './log'
import { applyMigrations, migrationCheck, readMigrations } from './migrate'
import { declaredPlacements } from './citus'
import type { AnyPlugin, CoreServices, PluginContext, ScopeDefinition, ToolDefinition } from './plugin'
import { ServiceRegistry } from './services/registry'
import { ListCache } from './http/list-cache'
import { createWrites } from './writes'
import { controlRoutes, type Control } from './control'

export interface ServiceOptions {
  registry: readonly AnyPlugin[]
  config: ServiceConfig
  /** An already open database (tests); otherwise opened from `config.database`. */
  database?: DatabaseHandle
  log?: Logger
  /** Provides services before any plugin is set up (embedders and tests: e.g. FCM options). */
  provide?: (services: ServiceRegistry) => void
  /** Background workers (e.g. the push outbox) run unless false (the operator CLI). */
  background?: boolean
  /** The CLI's door into a server on the embedded database (src/control.ts). */
  control?: Control
  /** Tests: a write with a list scope that changes rows and records no audit fails (src/writes.ts). */
  requireAudit?: boolean
  /** How long the stop steps (plugins' workers, then the database) may take together: 15 s unless set. */
  stopBudgetMs?: number
}

export interface Service {
  app: ReturnType<typeof createRoot>
  /** Web-standard handler: what every runtime entry serves (with the socket peer, if known). */
  fetch: (request: Request, connection?: ConnectionInfo) => Promise<Response>
  core: CoreServices
  /** Enabled plugins, in mount order. */
  plugins: AnyPlugin[]
  /** A plugin's context (config included) and what its setup bound, e.g. to run a CLI command. */
  contextOf(name: string): { context: PluginContext; bound: unknown }
  stop(): Promise<void>
}

/** Every scope the registered plugins declare, once each, in registry order. */
function collectScopes(registry: readonly AnyPlugin[]): ScopeDefinition[] {
  const seen = new Map<string, ScopeDefinition>()
  for (const plugin of registry) for (const scope of plugin.scopes ?? []) if (!seen.has(scope.name)) seen.set(scope.name, scope)
  return [...seen.values()]
}

function jsonResponse(body: unknown, status: number, headers: Record<string, unknown>) {
  return new Response(JSON.stringify(body), {
    status,
    headers: { ...(headers as Record<string, string>), 'content-type': 'application/json; charset=utf-8' },
  })
}

const Readiness = t.Object({ status: t.String(), database: t.Union([t.Literal('pglite'), t.Literal('postgres')]) })

/** The root Elysia instance with the cross-cutting hooks; plugins are mounted on it. */
function createRoot(
  log: Logger,
  database: DatabaseHandle,
  isMigrated: () => Promise<boolean>,
  cors: Cors | undefined,
  landing: (request: Request) => Response,
  methodsOf: { allowed: (path: string) => string[] | undefined },
) {
  return new Elysia({ normalize: false, encodeSchema: false })
    .use(routeMarking)
    .onRequest(({ request, set }) => {
      assignRequestId(request, set)
      // A preflight from an allowed origin is answered here, before any route.
      if (cors) return cors.apply(request, set.headers)
    })
    .onParse(({ request }) => parseRequestBody(request))
    .onError(({ error, code, set, request, route }) => {
      // No route for this method: where the path has routes under others, 405 with `Allow`.
      const allow = code === 'NOT_FOUND' ? methodsOf.allowed(new URL(request.url).pathname) : undefined
      const mapped = mapError(allow && !allow.includes(request.method) ? methodNotAllowed(request.method, allow) : error, code)
      const requestId = requestIdOf(set)
      if (mapped.unexpected) log.error('request failed', { requestId, route: routeOf(request, route), status: mapped.status, ...describeError(error) })
      return jsonResponse(errorEnvelope(mapped.items, requestId), mapped.status, { ...set.headers, ...mapped.headers })
    })
    .get('/health', () => ({ status: 'ok' as const }), {
      response: { 200: t.Object({ status: t.Literal('ok') }) },
      detail: { tags: ['Operations'], summary: 'Liveness: the process is up.' },
    })
    .get(
      '/ready',
      async ({ set }) => {
        try {
          if (await isMigrated()) return { status: 'ready', database: database.kind }
        } catch {
          // the database is unreachable: not ready
        }
        set.status = 503
        return { status: 'not ready', database: database.kind }
      },
      {
        response: { 200: Readiness, 503: Readiness },
        detail: { tags: ['Operations'], summary: 'Readiness: the database answers and its migrations are applied.' },
      },
    )
    .get('/', ({ request }) => landing(request), { detail: { hide: true } })
    .get('/favicon.ico', faviconResponse, { detail: { hide: true } })
    .get(PAGE_CSS_PATH, pageCssResponse, { detail: { hide: true } })
}

/**
 * Elysia finds the path at the first "/" after the URL's 11th character (`http://` plus four), so
 * a Host shorter than that (`Host: x` with `/aaaa/api/v1/users/me`) moved the path it routed by.
 * Such a request is re-addressed to `localhost`, so routing always follows the request's path:
 * two `indexOf`s per request, a new Request only for those short hosts.
 */
export function routedByPath(request: Request): Request {
  const url = request.url
  const authority = url.indexOf('//') + 2
  const path = url.indexOf('/', authority)
  if (path === url.indexOf('/', 11)) return request
  return new Request(`${url.slice(0, authority)}localhost${path < 0 ? '/' : url.slice(path)}`, request)
}

/** Builds the whole service; the caller serves `fetch` with its runtime's server. */
export async function createService(options: ServiceOptions): Promise<Service> {
  const { registry, config } = options
  const log = options.log ?? createLogger()
  const plugins = resolvePlugins(registry, config.enabled)
  const database =
    options.database ??
    (await openDatabase(config.database.url, {
      maxConnections: config.database.maxConnections,
      statementTimeoutMs: config.database.statementTimeoutMs,
    }))
  // What stop() runs, last registered first, each named for the log should one not finish in time.
  const stops: Array<{ name: string; run: () => void | Promise<void> }> = []
  const onStopAs = (name: string) => (run: () => void | Promise<void>) => void stops.push({ name, run })
  if (!options.database) onStopAs('database')(() => database.close())

  const migrations = readMigrations()
  // Every registered plugin's placements: the migrations create the tables of all of them.
  const { applied, placed } = await applyMigrations(database.db, { migrations, placements: declaredPlacements(registry) })
  if (applied) log.info('migrations applied', { count: applied, database: database.location })
  if (placed.length) log.info('tables placed on Citus', { tables: placed.map((table) => `${table.table} (${table.kind})`).join(', ') })

  const services = new ServiceRegistry()
  options.provide?.(services)
  const events = createEventBus(database, (message) => log.warn(message))
  onStopAs('event bus')(() => events.close())
  const instanceId = randomUUID()
  const proxyHops = trustedHops(config.server.trustProxy)
  const metrics = new ServiceMetrics(log, database, () => inFlight)
  // Request metrics are kept only while someone can read them.
  const observe = createRequestObserver({ log, accessLog: config.server.accessLog, metrics: config.server.metricsToken ? metrics : undefined })
  const changes = createChangeFeed(plugins.flatMap((plugin) => plugin.events ?? []))
  const writes = createWrites(database.db, changes, { requireAudit: options.requireAudit })
  const background = options.background ?? true
  const outboxes = createOutboxes({ metrics, events, log, background, onStop: onStopAs('outbox') })
  const core: CoreServices = {
    db: database.db,
    database: { kind: database.kind, location: database.location },
    events,
    changes,
    writes,
    services,
    scopes: collectScopes(registry),
    enabledScopes: collectScopes(plugins),
    tags: plugins.flatMap((plugin) => plugin.tags ?? []),
    tools: [],
    lists: new ListCache(config.server.listCacheBytes, config.server.listPagesBuiltBy === 'database'),
    http: { v1: createV1Kit(services, writes, instanceId) },
    log,
    metrics,
    instanceId,
    background,
    outboxes,
    clientAddress: (request) => clientAddress(request, proxyHops),
    isSecureRequest: (request) => isSecureRequest(request, proxyHops),
    publicUrl: config.server.publicUrl,
    exportIdleSeconds: config.server.exportIdleSeconds,
    onStop: onStopAs('core'),
  }
  const contexts = new Map<string, PluginContext>()
  for (const plugin of plugins)
    contexts.set(plugin.name, {
      ...core,
      services: services.scopedTo(plugin),
      log: log.child({ plugin: plugin.name }),
      config: config.pluginConfigs.get(plugin.name) ?? {},
      onStop: onStopAs(`plugin ${plugin.name}`),
    })

  // Each plugin binds its services once; routes, tools and CLI commands get what its setup returned.
  const bound = new Map<string, unknown>()
  for (const plugin of plugins) bound.set(plugin.name, await plugin.setup?.(contexts.get(plugin.name)!))
  const tools = core.tools as ToolDefinition[]
  for (const plugin of plugins) tools.push(...(plugin.tools?.(contexts.get(plugin.name)!, bound.get(plugin.name)) ?? []))
  const purge = setInterval(() => purgeIdempotencyKeys(database.db).catch(() => {}), 60 * 60 * 1000)
  purge.unref?.()
  onStopAs('idempotency purge')(() => clearInterval(purge))

  const landing = createLanding(plugins.flatMap((plugin) => plugin.links ?? []))
  const methodsOf = { allowed: (_path: string): string[] | undefined => undefined }
  const app = createRoot(log, database, migrationCheck(database.db, migrations), createCors(config.server.cors.origins), landing, methodsOf)
  app.use(metricsRoutes(metrics, config.server.metricsToken))
  // The socket's peer, never a forwarded address: the door is for this machine only.
  if (options.control) app.use(controlRoutes(options.control, (request) => clientAddress(request, 0)))
  for (const plugin of plugins) if (plugin.routes) app.use(plugin.routes(contexts.get(plugin.name)!, bound.get(plugin.name)))
  app.compile()
  methodsOf.allowed = allowedMethods(app.routes)

  let stopped = false
  let inFlight = 0
  return {
    app,
    fetch: async (request, connection) => {
      request = routedByPath(request)
      rememberConnection(request, connection)
      inFlight++
      const started = performance.now()
      try {
        const response = await app.handle(request)
        observe?.(request, response, started)
        return response
      } finally {
        inFlight--
      }
    },
    core,
    plugins,
    contextOf: (name) => {
      const context = contexts.get(name)
      if (!context) throw new Error(`no enabled plugin named "${name}"`)
      return { context, bound: bound.get(name) }
    },
    async stop() {
      if (stopped) return
      stopped = true
      // Let requests already being answered finish before their database goes away.
      for (const deadline = Date.now() + 10_000; inFlight > 0 && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 10))
      // The steps share one budget: a step that hangs (a worker waiting on a query that will not
      // return) is named in the log and left behind, so the process still exits (src/main.ts).
      const deadline = Date.now() + (options.stopBudgetMs ?? 15_000)
      const steps = stops.reverse()
      for (const [index, step] of steps.entries()) {
        let timer: ReturnType<typeof setTimeout> | undefined
        const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), Math.max(0, deadline - Date.now()))))
        try {
          const outcome = await Promise.race([Promise.resolve().then(step.run), late])
          if (outcome === 'late') {
            log.error('stop step did not finish in time; the rest are skipped', { step: step.name, skipped: steps.slice(index + 1).map((s) => s.name) })
            return
          }
        } catch (error) {
          log.warn('stop step failed', { step: step.name, ...describeError(error) })
        } finally {
          clearTimeout(timer)
        }
      }
    },
  }
}
