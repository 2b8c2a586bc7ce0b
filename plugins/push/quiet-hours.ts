/**
 * Quiet hours: a daily span of local wall-clock time (`22:00`–`07:00`, across midnight when the
 * start is later than the end) in the user's IANA time zone. A non-critical push due inside them
 * waits until they end: the first instant the local clock reads the end time or later, so a day
 * whose clocks skip the end time (a DST gap) ends them when the clocks jump, and a day that shows it
 * twice (clocks going back) ends them the first time.
 */

export interface QuietHours {
  /** `HH:MM`, 00:00 … 23:59. */
  start: string
  end: string
  timeZone: string
}

const CLOCK = /^([01]\d|2[0-3]):([0-5]\d)$/

/** Minutes after midnight of an `HH:MM` time, or null when it is not one. */
export function clockMinutes(value: string): number | null {
  const match = CLOCK.exec(value)
  return match ? Number(match[1]) * 60 + Number(match[2]) : null
}

/** Whether `timeZone` is an IANA zone this runtime knows (Intl refuses others). */
export function isTimeZone(timeZone: string): boolean {
  if (timeZone.length > 64) return false
  try {
    new Intl.DateTimeFormat('en-US', { timeZone })
    return true
  } catch {
    return false
  }
}

const formatters = new Map<string, Intl.DateTimeFormat>()

/** The local wall time of `instant` in `timeZone`, as a UTC timestamp of the same reading (ms). */
function wallClock(instant: number, timeZone: string): number {
  let format = formatters.get(timeZone)
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' })
    if (formatters.size > 500) formatters.clear()
    formatters.set(timeZone, format)
  }
  const parts: Record<string, number> = {}
  for (const part of format.formatToParts(new Date(instant))) if (part.type !== 'literal') parts[part.type] = Number(part.value)
  return Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!) + (instant % 1000 + 1000) % 1000
}

/**
 * The first instant after `after` at which the local clock in `timeZone` reads `wall` (a UTC-coded
 * reading) or later: `wall` itself, the first of two when the clocks go back (unless that one has
 * passed), or the moment the clocks jump over it.
 */
function firstInstantReading(wall: number, timeZone: string, after: number): number {
  // The zone's offsets a day either side: the reading falls under one of them (or in the gap between).
  const offsetAt = (instant: number) => wallClock(instant, timeZone) - instant
  const candidates = [wall - offsetAt(wall - 86_400_000), wall - offsetAt(wall + 86_400_000)].sort((a, b) => a - b)
  for (const instant of candidates) if (instant > after && wallClock(instant, timeZone) === wall) return instant
  // In a gap (the clocks skip `wall`): the moment they jump, found to the second between the two readings.
  let [low, high] = candidates as [number, number]
  while (high - low > 1000) {
    const middle = low + Math.floor((high - low) / 2000) * 1000
    if (wallClock(middle, timeZone) >= wall) high = middle
    else low = middle
  }
  return high
}

/** When the quiet hours holding `at` end, or null when `at` is outside them. */
export function quietUntil(quiet: QuietHours, at: Date): Date | null {
  const start = clockMinutes(quiet.start)
  const end = clockMinutes(quiet.end)
  if (start === null || end === null || start === end) return null
  const wall = wallClock(at.getTime(), quiet.timeZone)
  const midnight = Math.floor(wall / 86_400_000) * 86_400_000
  const minutes = (wall - midnight) / 60_000
  const inside = start < end ? minutes >= start && minutes < end : minutes >= start || minutes < end
  if (!inside) return null
  // The end is today unless the span crosses midnight and we are in its evening part.
  const endDay = start > end && minutes >= start ? midnight + 86_400_000 : midnight
  return new Date(firstInstantReading(endDay + end * 60_000, quiet.timeZone, at.getTime()))
}
