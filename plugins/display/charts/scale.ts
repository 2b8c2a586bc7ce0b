/** Nice axis ticks, linear maps and the axis labels that fit: pure functions of numbers. */
import { clamp, LABEL_GAP, round, textWidth } from './common'
import { formatTicks } from './number-format'

export interface Scale {
  /** Tick values, ascending. */
  ticks: number[]
  step: number
  /** The tick labels, formatted together. */
  labels: string[]
  /** The drawn range: the outer ticks, or the data bounds where a tick would not be finite. */
  low: number
  high: number
}

const STEP_MANTISSAS = [1, 2, 2.5, 5]
/** The smallest tick step: spans below it (subnormal values) would give a step of 0. */
const MIN_STEP = 1e-300

/** Ticks 1, 2, 2.5 or 5 × 10^n apart, covering low..high (low < high) in at most `intervals` steps. */
export function niceScale(low: number, high: number, intervals: number): Scale {
  const raw = high / intervals - low / intervals
  let magnitude = Math.max(MIN_STEP, 10 ** Math.floor(Math.log10(raw)))
  let step = magnitude
  search: for (let decade = 0; decade < 4; decade++, magnitude *= 10)
    for (const mantissa of STEP_MANTISSAS) {
      step = mantissa * magnitude
      if (Math.ceil(high / step) - Math.floor(low / step) <= intervals) break search
    }
  const first = Math.floor(low / step)
  const last = Math.ceil(high / step)
  const ticks: number[] = []
  for (let k = first; k <= last; k++) {
    const tick = Number((k * step).toPrecision(12))
    if (Number.isFinite(tick)) ticks.push(tick)
  }
  const scaleLow = first * step
  const scaleHigh = last * step
  return { ticks, step, labels: formatTicks(ticks, step), low: Number.isFinite(scaleLow) ? scaleLow : low, high: Number.isFinite(scaleHigh) ? scaleHigh : high }
}

/** A linear map of low..high onto `from`..`to`, safe for spans beyond the largest double. */
export function linear(low: number, high: number, from: number, to: number): (value: number) => number {
  const half = high / 2 - low / 2
  return (value: number) => (half > 0 ? round(from + ((value / 2 - low / 2) / half) * (to - from)) : round((from + to) / 2))
}

export interface Label {
  x: number
  text: string
}

/** The labels (centered on x, in order) that fit inside 0..width without overlapping each other. */
export function fitLabels(candidates: Label[], width: number): Label[] {
  const kept: Label[] = []
  let right = -Infinity
  for (const candidate of candidates) {
    const half = textWidth(candidate.text) / 2
    const x = half * 2 >= width ? width / 2 : clamp(candidate.x, half, width - half)
    if (x - half < right + LABEL_GAP) continue
    kept.push({ x: round(x), text: candidate.text })
    right = x + half
  }
  return kept
}
