/**
 * The fuzz lane's logger: it keeps every line at `error` with its fields (the service logs an
 * unexpected error, and only that, as one: `request failed`, `tool failed`), so the oracle can
 * fail the request that caused it. Lower levels are dropped, as LOG_LEVEL=silent would.
 */
import type { Logger } from '../../src/log'

export interface LoggedError {
  message: string
  fields: Record<string, unknown>
}

/** A logger recording error lines into `lines` (children add their fields). */
export function errorRecorder(lines: LoggedError[], base: Record<string, unknown> = {}): Logger {
  const ignore = () => {}
  return {
    debug: ignore,
    info: ignore,
    warn: ignore,
    error: (message, fields) => lines.push({ message, fields: { ...base, ...fields } }),
    child: (fields) => errorRecorder(lines, { ...base, ...fields }),
  }
}
