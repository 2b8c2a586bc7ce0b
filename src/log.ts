/** A small structured logger: one JSON line per event on stderr, level from LOG_LEVEL. */
import { ApiError } from './http/errors'
import { StartupError } from './startup-error'

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const
export type LogLevel = keyof typeof LEVELS

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void
  info(message: string, fields?: Record<string, unknown>): void
  warn(message: string, fields?: Record<string, unknown>): void
  error(message: string, fields?: Record<string, unknown>): void
  child(fields: Record<string, unknown>): Logger
}

/** LOG_LEVEL's level: unset or empty is info; anything else must be a level's name. */
export function parseLevel(value: string | undefined): LogLevel {
  if (!value) return 'info'
  if (!Object.hasOwn(LEVELS, value)) throw new StartupError(`LOG_LEVEL must be one of ${Object.keys(LEVELS).join(', ')} (got "${value}")`)
  return value as LogLevel
}

/**
 * Lines written in one turn of the event loop leave in one write (the access log writes a line
 * per request: one system call each cost ~10 % of a /health request), at the latest when 64 KiB
 * are waiting, and before the process exits.
 */
let waiting = ''
let flushScheduled = false
const FLUSH_BYTES = 64 * 1024

function flushLog(): void {
  flushScheduled = false
  if (waiting === '') return
  const lines = waiting
  waiting = ''
  process.stderr.write(lines)
}
process.on('exit', flushLog)

function emit(line: string): void {
  waiting += line
  if (waiting.length >= FLUSH_BYTES) flushLog()
  else if (!flushScheduled) {
    flushScheduled = true
    setImmediate(flushLog)
  }
}

/** A logger writing at or above `level` (default: LOG_LEVEL, else info). */
export function createLogger(level: LogLevel = parseLevel(process.env.LOG_LEVEL), base: Record<string, unknown> = {}): Logger {
  const threshold = LEVELS[level]
  // The line is written as text around the JSON of `base` (once) and of `fields` (each line), not
  // as one object spread together: the access log writes a line per request. A field named as one
  // before it comes later in the line, so a JSON reader sees it win, as a spread would have it.
  const baseText = JSON.stringify(base).slice(1, -1)
  const after = baseText ? `,${baseText}` : ''
  const write = (name: LogLevel, message: string, fields?: Record<string, unknown>) => {
    if (LEVELS[name] < threshold) return
    const own = fields ? JSON.stringify(fields) : '{}'
    emit(`{"time":"${new Date().toISOString()}","level":"${name}","message":${JSON.stringify(message)}${after}${own.length > 2 ? `,${own.slice(1)}` : '}'}\n`)
  }
  return {
    debug: (message, fields) => write('debug', message, fields),
    info: (message, fields) => write('info', message, fields),
    warn: (message, fields) => write('warn', message, fields),
    error: (message, fields) => write('error', message, fields),
    child: (fields) => createLogger(level, { ...base, ...fields }),
  }
}

const SQLSTATE = /^[0-9A-Z]{5}$/
const MAX_SQL = 2000

/**
 * The fields to log about an unexpected error, never its data: for a database error the SQL text
 * (with its $n placeholders), the SQLSTATE and the constraint, table and column it names, but
 * neither the parameter values nor any message (driver and server messages quote values, e.g.
 * `invalid input syntax for type integer: "…"`, `Key (secret_hash)=(…) already exists`); for any
 * other error its name, message and stack frames. Drizzle's wrapper (`Failed query: … params: …`)
 * and the driver's error are read through `cause`.
 */
export function describeError(error: unknown): Record<string, unknown> {
  const chain: any[] = []
  for (let current: any = error, depth = 0; current && typeof current === 'object' && depth < 5; current = current.cause, depth++) chain.push(current)
  const sql = chain.map((each) => each.query).find((query) => typeof query === 'string')
  const database = chain.find((each) => typeof each.code === 'string' && SQLSTATE.test(each.code))
  // Node's and postgres.js's connection codes (ECONNRESET, CONNECTION_CLOSED…), not the service's own error codes.
  const node = chain.find((each) => typeof each.code === 'string' && !SQLSTATE.test(each.code) && !(each instanceof ApiError))
  if (sql !== undefined || database) {
    const fields: Record<string, unknown> = { error: 'database error' }
    if (sql !== undefined) fields.sql = sql.length > MAX_SQL ? `${sql.slice(0, MAX_SQL)}…` : sql
    if (database) {
      fields.code = database.code
      for (const [name, keys] of Object.entries({ constraint: ['constraint_name', 'constraint'], table: ['table_name', 'table'], column: ['column_name', 'column'] })) {
        const value = keys.map((key) => database[key]).find((each) => typeof each === 'string' && each)
        if (value) fields[name] = value
      }
    } else if (node) fields.code = node.code
    return fields
  }
  if (node) return { error: String(node.name ?? 'Error'), code: node.code }
  if (error instanceof Error) return { error: error.name, message: error.message, stack: error.stack?.split('\n').slice(1).join('\n') }
  return { error: typeof error }
}

/** `GET /api/v1/projects/:projectId`: the method and the route pattern (the path when no route matched), for logs. */
export function routeOf(request: Request, route: string | undefined): string {
  if (route) return `${request.method} ${route}`
  const url = request.url
  const start = url.indexOf('/', url.indexOf('//') + 2)
  const end = url.indexOf('?', start)
  // An unmatched path is the client's text: kept short, never its query string.
  return `${request.method} ${(start < 0 ? '/' : url.slice(start, end < 0 ? undefined : end)).slice(0, 200)}`
}
