/** The plugin manifest and the core services a plugin receives. */
import type { Outboxes } from './outbox-runner'
import type { Static, TObject, TSchema } from '@sinclair/typebox'
import type { AnyElysia } from 'elysia'
import type { ChangeFeed, EventTypeDefinition } from './changes'
import type { Database, DatabaseHandle } from './db'
import type { EventBus } from './events'
import type { ListCache } from './http/list-cache'
import type { V1Kit } from './http/v1'
import type { Logger } from './log'
import type { Metrics } from './metrics'
import type { Actor } from './services/identity'
import type { Writes } from './writes'
import type { PluginServices, ServiceRegistry } from './services/registry'

export interface ScopeDefinition {
  name: string
  description: string
  /** Every use of it needs an administrator: never granted to a member's OAuth app (a key may hold it, to no effect). */
  administratorsOnly?: true
}

/** What every plugin receives from the core; the only way it reaches shared state. */
export interface CoreServices {
  db: Database
  database: Pick<DatabaseHandle, 'kind' | 'location'>
  events: EventBus
  /** Changes recorded in their transactions, for observers such as webhooks (src/changes.ts). */
  changes: ChangeFeed
  /** The unit of work of every write: change, audit record, events, list versions, idempotent answer (src/writes.ts). */
  writes: Writes
  /** Every provided service (the core's view; a plugin's context narrows it, see PluginContext). */
  services: ServiceRegistry
  /** Every scope declared by a registered plugin (enabled or not), for key creation. */
  scopes: readonly ScopeDefinition[]
  /** The scopes of the enabled plugins: what a person is offered when creating a key. */
  enabledScopes: readonly ScopeDefinition[]
  /** The OpenAPI tags of the enabled plugins. */
  tags: readonly { name: string; description: string }[]
  /** The MCP tools of the enabled plugins (filled once every plugin is set up). */
  tools: readonly ToolDefinition[]
  /** Cached list pages, exact through change_versions (src/http/list-cache.ts). */
  lists: ListCache
  /** The API v1 kit: `.use(http.v1)` gives routes the `scopes` macro and the envelope. */
  http: { v1: V1Kit }
  log: Logger
  /** Prometheus metrics of this service (src/metrics.ts): a plugin registers its own, read at GET /metrics. */
  metrics: Metrics
  /** Unique per running process. */
  instanceId: string
  /** False in a one-shot process (the operator CLI): plugins start no background workers there. */
  background: boolean
  /** Durable queues' workers (src/outbox-runner.ts): one loop, leases, NOTIFY wake-ups, metrics. */
  outboxes: Outboxes
  /** The client's address (see src/http/client.ts), honouring `server.trustProxy`. */
  clientAddress(request: Request): string
  /** `server.publicUrl`: the origin links handed out start with (invitations); undefined: the request's origin. */
  publicUrl?: string
  /** `server.exportIdleSeconds`: how long a project export waits for a client that stopped reading. */
  exportIdleSeconds: number
  /** Whether the browser reached us over HTTPS (for Secure cookies), honouring `server.trustProxy`. */
  isSecureRequest(request: Request): boolean
  /** Runs at shutdown, in reverse order of registration. */
  onStop(stop: () => void | Promise<void>): void
}

export interface PluginContext<C = Record<string, unknown>> extends Omit<CoreServices, 'services'> {
  /** This plugin's validated config, defaults applied. */
  config: C
  /** The services of this plugin and of the plugins it declared as dependencies (see registry.ts). */
  services: PluginServices
}

/**
 * An MCP tool a plugin contributes: a thin adapter over the same service function its REST twin
 * calls. The mcp plugin serves every enabled plugin's tools.
 */
export interface ToolDefinition<S extends TSchema = TSchema> {
  name: string
  description: string
  /** Scopes the key must hold; the tool is listed only for keys that hold them all. */
  scopes: readonly string[]
  /** Arguments, validated before `run` (REST names: projectId, page, size, body fields…). */
  input: S
  readOnly?: boolean
  destructive?: boolean
  /**
   * The arguments as this caller's organization sees them (its custom fields' keys, types and
   * options), listed to the caller instead of `input`; `input` still validates. `memo` is shared
   * by the tools of one listing, so they read what they share once.
   */
  describe?(actor: Actor, memo: Map<string, Promise<unknown>>): Promise<TSchema>
  /** Returns the resource, a Page (answered as `{items, meta}`), an array (`{items}`) or another JSON value (`{value}`). */
  run(actor: Actor, input: Static<S>): Promise<unknown>
}

/** Declares a tool; the identity function that types `run`'s input from the schema. */
export function defineTool<S extends TSchema>(tool: ToolDefinition<S>): ToolDefinition {
  return tool as unknown as ToolDefinition
}

/** One operator CLI command, e.g. `key create`. */
export interface CliCommand<C = Record<string, unknown>, B = unknown> {
  description: string
  flags: Record<string, { required?: boolean; description: string }>
  /** Returns the one JSON object the CLI prints; throw to print an error and exit non-zero. */
  run(context: PluginContext<C>, flags: Record<string, string>, bound: B): Promise<Record<string, unknown>>
}

/** How a table is placed on a Citus cluster: distributed by `organization_id` unless declared here. */
export interface TablePlacement {
  kind: 'reference' | 'local'
  /** Why the table is not distributed by organization (shown in the Citus statements of docs/scaling.md). */
  reason: string
}

export interface PluginManifest<S extends TObject = TObject, B = unknown> {
  name: string
  description: string
  /** Plugins that must be enabled (and are mounted first); the only ones whose services, public face and read models it may use. */
  dependencies?: readonly string[]
  /** Plugins it uses when they are enabled (through `services.find`), without needing them. */
  optionalDependencies?: readonly string[]
  /** TypeBox schema of this plugin's section of service.config.json, with defaults. */
  config?: S
  /** The plugin's Drizzle tables (in its schema.ts): the only tables its SQL may touch. */
  tables?: Record<string, unknown>
  /**
   * Views of its tables it exports for its dependents' SQL (read models), by name, each with what it
   * gives: a dependent reads another plugin's data only through these or its public face.
   */
  readModels?: Record<string, string>
  /** Tables not distributed by organization on Citus, each with its reason. */
  placement?: Record<string, TablePlacement>
  scopes?: readonly ScopeDefinition[]
  /** Event types it records through the change feed (`work_item.created`…): its part of the webhook catalog. */
  events?: readonly EventTypeDefinition[]
  /** OpenAPI tags of its routes. */
  tags?: readonly { name: string; description: string }[]
  /** What the service's landing page (`GET /`) links to for this plugin: a person's ways in. */
  links?: readonly LandingLink[]
  /**
   * Binds the plugin's services to what it depends on, provides its public services, subscribes to
   * events and starts workers; runs before any routes are built. What it returns is handed to
   * `routes`, `tools` and CLI commands: the plugin's services, bound once.
   */
  setup?(context: PluginContext<Static<S>>): B | Promise<B>
  routes?(context: PluginContext<Static<S>>, bound: B): AnyElysia
  tools?(context: PluginContext<Static<S>>, bound: B): ToolDefinition[]
  cli?: Record<string, CliCommand<Static<S>, B>>
}

/** A link of the landing page: a path the plugin serves, its name and what it is for. */
export interface LandingLink {
  href: string
  title: string
  description: string
}

/** Declares a plugin; the identity function that gives the manifest its types (`B`: what setup binds). */
export function definePlugin<S extends TObject = TObject, B = unknown>(manifest: PluginManifest<S, B>): PluginManifest<S, B> {
  return manifest
}

export type AnyPlugin = PluginManifest<any, any>
