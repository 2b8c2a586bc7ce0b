/**
 * Configuration: service.config.json (path in SERVICE_CONFIG), then environment overrides,
 * each plugin's section validated against its schema with defaults applied.
 */
import { existsSync, readFileSync } from 'node:fs'
import { Type, type TObject } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { describeValueError, excerpt, pointerToField } from './http/validation-items'
import { unknownPlugin } from './loader'
import { StartupError } from './startup-error'
import type { AnyPlugin } from './plugin'

export const DEFAULT_CONFIG_FILE = './service.config.json'

const ServerSection = Type.Object(
  {
    port: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
    host: Type.String({ default: '0.0.0.0' }),
    trustProxy: Type.Union([Type.Boolean(), Type.Integer({ minimum: 0, maximum: 16 })], {
      default: false,
      description: 'Proxies in front of the service that append to X-Forwarded-For (true = 1): the client is the entry the outermost one added. Only behind proxies you run.',
    }),
    listCacheBytes: Type.Integer({
      minimum: 0,
      default: 64 * 1024 * 1024,
      description: 'Bytes of encoded list pages each instance keeps (least recently used go first); 0 turns the cache off. Cached pages are exact: see docs/performance.md.',
    }),
    listPagesBuiltBy: Type.Union([Type.Literal('database'), Type.Literal('service')], {
      default: 'database',
      description:
        "Who writes a work-item list page's JSON on a cache miss: 'database' (one statement answers the page as one text, passed through undecoded; measured faster on PGlite and PostgreSQL, see docs/performance.md) or 'service' (the rows are decoded and encoded here).",
    }),
    reusePort: Type.Boolean({
      default: false,
      description: 'Lets several processes listen on one port (SO_REUSEPORT, Bun only). Off: a taken port refuses start-up.',
    }),
    publicUrl: Type.Optional(
      Type.String({
        pattern: '^https?://[^/\\s?#]+$',
        description: 'scheme://host[:port] people reach the service at (e.g. https://track.example.com): links the service hands out (invitations) start with it; unset: the origin of the request (MCP: a path).',
      }),
    ),
    accessLog: Type.Boolean({ default: true, description: 'One JSON line per request: request id, method, route pattern, status, duration.' }),
    exportIdleSeconds: Type.Integer({
      minimum: 1,
      maximum: 3600,
      default: 30,
      description: "How long a project export (GET /api/v1/projects/{projectId}/export) waits for a client that stopped reading before it ends the export and gives back its snapshot's database connection.",
    }),
    metricsToken: Type.Optional(
      Type.String({ minLength: 16, writeOnly: true, description: 'Serves Prometheus metrics at GET /metrics to a Bearer token equal to this; unset: no /metrics.' }),
    ),
    cors: Type.Object(
      {
        origins: Type.Array(Type.String({ pattern: '^https?://[^/\\s]+$', description: 'scheme://host[:port], e.g. https://example.com' }), {
          default: [],
          description: 'Origins (scheme://host[:port]) allowed to call /api/v1, the display API and /mcp from a browser; empty: no CORS headers.',
        }),
      },
      { additionalProperties: false, default: {} },
    ),
  },
  { additionalProperties: false },
)

const DatabaseSection = Type.Object(
  {
    maxConnections: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }),
    statementTimeoutMs: Type.Integer({ minimum: 0, default: 15000 }),
  },
  { additionalProperties: false },
)

const PluginsSection = Type.Object(
  {
    enabled: Type.Optional(Type.Array(Type.String())),
    disabled: Type.Optional(Type.Array(Type.String())),
  },
  { additionalProperties: false },
)

export interface ServiceConfig {
  server: {
    port: number
    host: string
    trustProxy: boolean | number
    listCacheBytes: number
    listPagesBuiltBy: 'database' | 'service'
    reusePort: boolean
    accessLog: boolean
    exportIdleSeconds: number
    metricsToken?: string
    publicUrl?: string
    cors: { origins: string[] }
  }
  database: { url: string | undefined; maxConnections: number; statementTimeoutMs: number }
  /** Names of the enabled plugins (not yet ordered). */
  enabled: Set<string>
  /** Every registered plugin's validated config, defaults applied. */
  pluginConfigs: Map<string, Record<string, unknown>>
}

export interface ConfigSource {
  /** The parsed file content; when absent, read from `file`. */
  raw?: Record<string, unknown>
  /** Path of the JSON file; a missing file means "all defaults". */
  file?: string
  env?: Record<string, string | undefined>
}

const RESERVED = new Set(['plugins', 'server', 'database', '$schema'])

function readFile(path: string, required: boolean): Record<string, unknown> {
  if (!existsSync(path)) {
    if (required) throw new StartupError(`SERVICE_CONFIG names ${path}, which does not exist (set it empty for no config file)`)
    return {}
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'))
  } catch (error) {
    throw new StartupError(`${path} is not valid JSON: ${parseProblem(error as Error)}`)
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new StartupError(`${path} must hold a JSON object`)
  return parsed as Record<string, unknown>
}

/**
 * What the JSON parser said, without the text it quotes: the token it stopped at may be a
 * secret written without quotes (`"metricsToken": s3cr3t…`). Its position, when it gives one, stays.
 */
function parseProblem(error: Error): string {
  const words = error.message.split('"')[0]!.replace(/[\s,:]+$/, '')
  const position = /position (\d+)/.exec(error.message)?.[1]
  return `${words || 'unexpected input'}${position && !words.includes(position) ? ` at position ${position}` : ''}`
}

/** A setting whose value is a secret (`metricsToken`, `encryptionKey`, a password…): named so, or `writeOnly` in its schema. */
const SECRET_SEGMENT = /(token|key|secret|password|passphrase|credentials?)$|secret|password|private/i

function isSecretSetting(segments: readonly string[], schema: unknown): boolean {
  return (schema as { writeOnly?: boolean } | undefined)?.writeOnly === true || segments.some((segment) => SECRET_SEGMENT.test(segment))
}

/**
 * What a refused setting held, for the error line: a number, boolean or string (64 characters at
 * most), never an object or a list, which may hold a secret setting of its own. A secret's value is
 * never repeated at all (isSecretSetting): error output lands in logs.
 */
function gotWords(value: unknown): string {
  if (value === undefined) return 'got nothing'
  if (Array.isArray(value)) return `got a list of ${value.length}`
  if (typeof value === 'object' && value !== null) return 'got an object'
  return `got ${excerpt(JSON.stringify(value) ?? String(value))}`
}

/** Applies defaults and validates; the first problem becomes a one-line StartupError in the service's words. */
function validateSection<S extends TObject>(schema: S, value: unknown, label: string): Record<string, unknown> {
  if (value !== undefined && (typeof value !== 'object' || value === null || Array.isArray(value)))
    throw new StartupError(`config ${label}: must be an object`)
  const section = Value.Default(schema, structuredClone(value ?? {})) as Record<string, unknown>
  // Own properties only: a setting named `constructor` or `__proto__` is as unknown as any other.
  for (const key of Object.keys(section))
    if (!Object.hasOwn(schema.properties, key)) throw new StartupError(`config ${label}.${excerpt(key)}: unknown setting`)
  const first = Value.Errors(schema, section).First()
  if (first) {
    const segments = first.path.split('/').slice(1)
    const path = pointerToField(first.path)
    const got = isSecretSetting(segments, first.schema) ? 'value not shown: a secret setting' : gotWords(first.value)
    throw new StartupError(`config ${label}${path ? `.${path}` : ''}: ${describeValueError(first)} (${got})`)
  }
  return section
}

function commaList(value: string | undefined): string[] | undefined {
  if (value === undefined || value.trim() === '') return undefined
  return value
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean)
}

/** Reads and validates the whole configuration against the registered plugins. */
export function loadConfig(registry: readonly AnyPlugin[], source: ConfigSource = {}): ServiceConfig {
  const env = source.env ?? process.env
  // SERVICE_CONFIG names a file that must exist; empty means none; unset, ./service.config.json if present.
  const named = source.file ?? env.SERVICE_CONFIG
  const raw = source.raw ?? (named === '' ? {} : readFile(named ?? DEFAULT_CONFIG_FILE, named !== undefined))
  const known = new Map(registry.map((plugin) => [plugin.name, plugin]))

  for (const key of Object.keys(raw)) if (!RESERVED.has(key) && !known.has(key)) throw unknownPlugin(key, registry)

  const plugins = validateSection(PluginsSection, raw.plugins, 'plugins') as { enabled?: string[]; disabled?: string[] }
  const server = validateSection(ServerSection, raw.server, 'server') as ServiceConfig['server']
  const database = validateSection(DatabaseSection, raw.database, 'database') as Omit<ServiceConfig['database'], 'url'>

  const enabledList = commaList(env.PLUGINS_ENABLED) ?? plugins.enabled ?? registry.map((plugin) => plugin.name)
  const disabledList = [...(plugins.disabled ?? []), ...(commaList(env.PLUGINS_DISABLED) ?? [])]
  for (const name of [...enabledList, ...disabledList]) if (!known.has(name)) throw unknownPlugin(name, registry)
  const enabled = new Set(enabledList.filter((name) => !disabledList.includes(name)))

  if (env.PORT !== undefined) {
    const port = Number(env.PORT)
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new StartupError(`PORT: must be an integer 0..65535 (got "${excerpt(env.PORT)}")`)
    server.port = port
  }

  const pluginConfigs = new Map<string, Record<string, unknown>>()
  for (const plugin of registry)
    pluginConfigs.set(plugin.name, plugin.config ? validateSection(plugin.config, raw[plugin.name], plugin.name) : {})

  return { server, database: { ...database, url: env.DATABASE_URL || undefined }, enabled, pluginConfigs }
}
