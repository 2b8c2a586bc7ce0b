/**
 * Numbers for people, in one place: axes, value labels, legends, tooltips and boxes of the live
 * dashboard all format through these functions, so one value reads the same everywhere.
 */

const GROUPED = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2, signDisplay: 'negative' })
const GROUPED_FULL = new Intl.NumberFormat('en-US', { maximumFractionDigits: 4, signDisplay: 'negative' })
const FORMATS = new Map<number, Intl.NumberFormat>()
const SUFFIXES = ['', 'k', 'M', 'B', 'T']
const COMPACT_FROM = 10_000
const SMALL = 0.01
/** Below this a non-zero value rounds to 0 at four decimals; formatFull then keeps 4 significant digits. */
const FULL_TINY = 0.00005
/** From here on formatFull uses exponent notation instead of a line of zeros. */
const FULL_HUGE = 1e21
const PLAIN_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?$/

/**
 * Short form for labels: "1,337", "0.25" below 10,000 (at most 2 decimals; 2 significant digits
 * below 0.01, so that 0.004 is not "0"); "12.5k", "3.2M", "1.1B", "-45k" (3 significant digits) above.
 */
export function formatCompact(n: number): string {
  if (!Number.isFinite(n)) return String(n)
  const abs = Math.abs(n)
  if (abs > 0 && abs < SMALL) return String(Number(n.toPrecision(2)))
  if (abs < COMPACT_FROM) return GROUPED.format(n)
  const sign = n < 0 ? '-' : ''
  let tier = Math.min(SUFFIXES.length - 1, Math.floor(Math.log10(abs) / 3))
  let scaled = Number((abs / 1000 ** tier).toPrecision(3))
  if (scaled >= 1000 && tier < SUFFIXES.length - 1) scaled = Number((abs / 1000 ** ++tier).toPrecision(3))
  if (scaled >= 1000) return sign + exponent(abs)
  return `${sign}${scaled}${SUFFIXES[tier]}`
}

/** `abs` as "1.5e15": three significant digits and a power of ten. */
function exponent(abs: number): string {
  const [mantissa, power] = abs.toExponential(2).split('e')
  return `${Number(mantissa)}e${Number(power)}`
}

/** Long form for tooltips: "1,337,000.5" (grouping, up to 4 decimals; tiny and huge values keep their magnitude). */
export function formatFull(n: number): string {
  if (!Number.isFinite(n)) return String(n)
  const abs = Math.abs(n)
  if (abs >= FULL_HUGE || (abs > 0 && abs < FULL_TINY)) return String(Number(n.toPrecision(4)))
  return GROUPED_FULL.format(n)
}

/**
 * The labels of an axis whose ticks are `step` apart, in one unit and precise enough to tell
 * neighbours apart: "0", "2.5k", "5k", "7.5k" or "1.7M", "1.705M", "1.71M" or "0.001", "0.002".
 */
export function formatTicks(ticks: number[], step: number): string[] {
  const largest = ticks.reduce((max, tick) => Math.max(max, Math.abs(tick)), 0)
  const tier = largest < COMPACT_FROM ? 0 : Math.floor(Math.log10(largest) / 3)
  if (tier >= SUFFIXES.length) return ticks.map((tick) => (tick === 0 ? '0' : (tick < 0 ? '-' : '') + exponent(Math.abs(tick))))
  const unit = 1000 ** tier
  const format = withDecimals(decimalsOf(step / unit))
  return ticks.map((tick) => (tick === 0 ? '0' : format.format(tick / unit) + SUFFIXES[tier]))
}

/** A grouping format with at most `decimals` fraction digits (made once per count). */
function withDecimals(decimals: number): Intl.NumberFormat {
  let format = FORMATS.get(decimals)
  if (!format) FORMATS.set(decimals, (format = new Intl.NumberFormat('en-US', { maximumFractionDigits: decimals, signDisplay: 'negative' })))
  return format
}

/** The fraction digits that write `step` exactly (0..20). */
function decimalsOf(step: number): number {
  for (let decimals = 0; decimals < 20; decimals++) {
    const scaled = step * 10 ** decimals
    const whole = Math.round(scaled)
    if (whole !== 0 && Math.abs(scaled - whole) <= 1e-9 * scaled) return decimals
  }
  return 20
}

/** `part` as a share of `total`: "60%", "33.3%", "<0.1%"; "0%" for zero and "—" for a negative part or no total. */
export function formatPercent(part: number, total: number): string {
  if (part < 0 || !(total > 0)) return '—'
  if (part === 0) return '0%'
  const percent = (part / total) * 100
  if (percent < 0.1) return '<0.1%'
  if (percent > 99.9 && part < total) return '>99.9%'
  return `${Number(percent.toFixed(1))}%`
}

/** How a component writes its numbers: `compact` ("52k", the default) or `exact` ("51,990"). */
export type NumberFormat = 'compact' | 'exact'
export const NUMBER_FORMATS: readonly NumberFormat[] = ['compact', 'exact']

/** A plain decimal ("51990", "-12500.50") with its integer digits grouped and every digit kept: "51,990", "-12,500.50". */
const groupDigits = (plain: string) => plain.replace(/^(-?)(\d+)/, (_, sign: string, digits: string) => sign + digits.replace(/\B(?=(\d{3})+$)/g, ','))

/** Every digit of a number, grouped: "51,990", "0.30000000000000004"; exponent notation where JavaScript writes one ("1e+21"). */
export function formatExact(n: number): string {
  const text = String(n)
  return PLAIN_NUMBER.test(text) ? groupDigits(text) : text
}

/** A number in the component's `format`: compact for labels unless the component asks for exact numbers. */
export const formatValue = (n: number, format: NumberFormat = 'compact') => (format === 'exact' ? formatExact(n) : formatCompact(n))

/**
 * A box text: a plain decimal number ("1337", "-12500.5") in compact form ("1,337", "-12.5k"), or
 * with `exact` its posted digits grouped ("51,990", "-12,500.5"); any other text exactly as posted.
 */
export function formatBoxValue(text: string, format: NumberFormat = 'compact'): string {
  const trimmed = text.trim()
  if (!PLAIN_NUMBER.test(trimmed)) return text
  if (format === 'exact') return groupDigits(trimmed)
  const value = Number(trimmed)
  return Number.isFinite(value) ? formatCompact(value) : text
}
