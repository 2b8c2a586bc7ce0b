/** A small structured logger: one JSON line per event on stderr, level from LOG_LEVEL. */

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const
export type LogLevel = keyof typeof LEVELS

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void
  info(message: string, fields?: Record<string, unknown>): void
  warn(message: string, fields?: Record<string, unknown>): void
  error(message: string, fields?: Record<string, unknown>): void
  child(fields: Record<string, unknown>): Logger
}

function parseLevel(value: string | undefined): LogLevel {
  return value && value in LEVELS ? (value as LogLevel) : 'info'
}

/** A logger writing at or above `level` (default: LOG_LEVEL, else info). */
export function createLogger(level: LogLevel = parseLevel(process.env.LOG_LEVEL), base: Record<string, unknown> = {}): Logger {
  const threshold = LEVELS[level]
  const write = (name: LogLevel, message: string, fields?: Record<string, unknown>) => {
    if (LEVELS[name] < threshold) return
    process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level: name, message, ...base, ...fields })}\n`)
  }
  return {
    debug: (message, fields) => write('debug', message, fields),
    info: (message, fields) => write('info', message, fields),
    warn: (message, fields) => write('warn', message, fields),
    error: (message, fields) => write('error', message, fields),
    child: (fields) => createLogger(level, { ...base, ...fields }),
  }
}
