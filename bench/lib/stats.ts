/** Small arithmetic the benchmarks share: rounding for the tables, means, percentiles, the best run. */

/** A figure for a table: rounded to `digits`, with thousands separators. */
export const round = (value: number, digits = 0) => Number(value.toFixed(digits)).toLocaleString('en-US', { maximumFractionDigits: digits })

export const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length

/** The nearest-rank percentile `p` (0..1) of `values` (NaN when there are none). */
export function percentile(values: number[], p: number): number {
  if (!values.length) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!
}

/** Latency of sequential requests, in ms (nearest-rank percentiles). */
export interface Latency {
  p50: number
  p99: number
  max: number
  samples: number
}

export function latency(values: number[]): Latency {
  return { p50: percentile(values, 0.5), p99: percentile(values, 0.99), max: Math.max(...values), samples: values.length }
}

/** The run with the most requests per second. */
export const best = <T extends { requestsPerSecond: number }>(runs: T[]): T => runs.reduce((a, b) => (b.requestsPerSecond > a.requestsPerSecond ? b : a))

/** Least-squares slope of y over x, with its standard error (NaN below 3 points). */
export function fitSlope(points: Array<[number, number]>): { slope: number; standardError: number } {
  const n = points.length
  if (n < 2) return { slope: 0, standardError: Number.NaN }
  const mx = points.reduce((sum, [x]) => sum + x, 0) / n
  const my = points.reduce((sum, [, y]) => sum + y, 0) / n
  const sxy = points.reduce((sum, [x, y]) => sum + (x - mx) * (y - my), 0)
  const sxx = points.reduce((sum, [x]) => sum + (x - mx) ** 2, 0)
  if (sxx === 0) return { slope: 0, standardError: Number.NaN }
  const slope = sxy / sxx
  const residuals = points.reduce((sum, [x, y]) => sum + (y - (my + slope * (x - mx))) ** 2, 0)
  return { slope, standardError: n > 2 ? Math.sqrt(residuals / (n - 2) / sxx) : Number.NaN }
}
