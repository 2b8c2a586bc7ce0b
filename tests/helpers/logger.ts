import type { Logger } from '../../src/log'

/** A logger that keeps the level and message of what it is told (children write to the same list). */
export function capturingLogger(lines: Array<{ level: string; message: string }>): Logger {
  const logger: Logger = {
    debug: (message) => lines.push({ level: 'debug', message }),
    info: (message) => lines.push({ level: 'info', message }),
    warn: (message) => lines.push({ level: 'warn', message }),
    error: (message) => lines.push({ level: 'error', message }),
    child: () => logger,
  }
  return logger
}
