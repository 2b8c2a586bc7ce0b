import type { Logger } from '../../src/log'

/** A line a capturing logger kept: its level and message, and with `fields`, its fields (a child's merged in). */
export interface LoggedLine {
  level: string
  message: string
  fields?: Record<string, unknown>
}

export interface CapturingOptions {
  /** The levels kept (default: all four); the others are dropped, as a quieter LOG_LEVEL would. */
  levels?: readonly string[]
  /** Keep each line's fields, a child logger's own merged under the line's. */
  fields?: boolean
  /** Also print the first line of each message on stderr, so a failure shows its cause. */
  echo?: boolean
}

/** A logger that keeps what it is told in `lines` (children write to the same list). */
export function capturingLogger(lines: LoggedLine[], options: CapturingOptions = {}, base: Record<string, unknown> = {}): Logger {
  const kept = (level: string) => {
    if (options.levels && !options.levels.includes(level)) return () => {}
    return (message: string, fields?: Record<string, unknown>) => {
      const merged = { ...base, ...fields }
      if (options.echo && !lines.some((line) => line.message === message)) console.error(`[${level}] ${message} ${JSON.stringify(merged)}`)
      lines.push(options.fields ? { level, message, fields: merged } : { level, message })
    }
  }
  return {
    debug: kept('debug'),
    info: kept('info'),
    warn: kept('warn'),
    error: kept('error'),
    child: (fields) => capturingLogger(lines, options, { ...base, ...fields }),
  }
}
