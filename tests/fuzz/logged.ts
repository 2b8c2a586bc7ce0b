/**
 * The fuzz lane's logger: it keeps every line at `error` with its fields (the service logs an
 * unexpected error, and only that, as one: `request failed`, `tool failed`), so the oracle can
 * fail the request that caused it. Lower levels are dropped, as LOG_LEVEL=silent would.
 */
import type { Logger } from '../../src/log'
import { capturingLogger, type LoggedLine } from '../helpers/logger'

export interface LoggedError extends LoggedLine {
  fields: Record<string, unknown>
}

/** A logger recording error lines into `lines` (children add their fields). */
export const errorRecorder = (lines: LoggedError[]): Logger => capturingLogger(lines, { levels: ['error'], fields: true })
