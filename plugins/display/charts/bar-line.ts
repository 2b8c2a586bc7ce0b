/**
 * What bar and line charts share: the series in drawing order (by x on a numeric axis), its
 * layout in a variant (the y scale, each point's x, the x labels that fit) and its axes. Pure
 * functions of the data and the variant's size.
 */
import { html, type Html } from '../../../src/http/html'
import type { ComponentDataOf } from '../model'
import { CHAR_WIDTH, clamp, FONT, LABEL_GAP, PAD, round, textWidth } from './common'
import { truncate, type Point } from './marks'
import { formatCompact, formatTicks } from './number-format'
import { fitLabels, linear, niceScale, type Label, type Scale } from './scale'

/** Below this height a chart shows only its marks: no axes, labels or gridlines. */
const MIN_AXES_HEIGHT = 72
const X_AXIS_ROOM = 22
const VALUE_ROOM = 14
const TICK_SPACING = 30

export interface Series {
  /** In drawing order: by x on a numeric axis, as posted otherwise. */
  points: Point[]
  /** The x of each point as a number (numeric axis only). */
  xValues: number[]
  numeric: boolean
  low: number
  high: number
}

/** The points in drawing order, whether x is numeric (xNumber and every x a number) and the y bounds with 0. */
export function series(data: ComponentDataOf<'barChart' | 'lineChart'>): Series {
  const posted: Point[] = data.points
  const numeric = Boolean(data.xNumber) && posted.every((point) => point.x.trim() !== '' && Number.isFinite(Number(point.x)))
  const sorted = numeric ? posted.map((point) => ({ point, x: Number(point.x) })).sort((a, b) => a.x - b.x) : []
  let low = 0
  let high = 0
  for (const point of posted) {
    if (point.y < low) low = point.y
    if (point.y > high) high = point.y
  }
  return { points: numeric ? sorted.map((entry) => entry.point) : posted, xValues: sorted.map((entry) => entry.x), numeric, low, high }
}

/** The plot of a series in one variant: pixel positions, the y scale and the x labels that fit. */
export interface Plot {
  height: number
  axes: boolean
  left: number
  right: number
  zero: number
  y: (value: number) => number
  scale: Scale
  /** Pixel x of each point. */
  xs: number[]
  /** Horizontal room of one point: the slot on a text axis, the closest gap on a numeric one. */
  spacing: number
  xLabels: Label[]
}

/** Lays a series out in a chart `width` units wide (room above and below the bars for their value labels). */
export function plot(data: Series, width: number, height: number, bars: boolean): Plot {
  const axes = height >= MIN_AXES_HEIGHT
  const top = PAD + (bars && axes && data.high > 0 ? VALUE_ROOM : 0)
  const bottom = Math.max(top + 1, height - (axes ? X_AXIS_ROOM : PAD) - (bars && axes && data.low < 0 ? VALUE_ROOM : 0))
  const high = data.high === data.low ? 1 : data.high
  const intervals = clamp(Math.floor((bottom - top) / TICK_SPACING), 2, 5)
  const scale: Scale = axes ? niceScale(data.low, high, intervals) : { ticks: [], step: 1, labels: [], low: data.low, high }
  const tickWidth = Math.max(0, ...scale.labels.map((label) => textWidth(label)))
  const left = axes ? PAD + tickWidth + LABEL_GAP : PAD
  const right = width - PAD
  const y = linear(scale.low, scale.high, bottom, top)
  const placed = data.numeric ? numericX(data, left, right, bars) : textX(data, left, right)
  return { height, axes, left, right, zero: y(0), y, scale, ...placed, xLabels: axes ? placed.xLabels(width) : [] }
}

/**
 * Points centered in equal slots, labelled by every k-th (shortened) x so that labels never
 * collide, starting from the first point whose label needs no shift to stay inside the chart.
 */
function textX(data: Series, left: number, right: number) {
  const count = Math.max(1, data.points.length)
  const slot = (right - left) / count
  const xs = data.points.map((_, i) => round(left + slot * (i + 0.5)))
  const xLabels = (width: number) => {
    const maxChars = clamp(Math.floor(Math.min((right - left) / 3, 120) / (FONT * CHAR_WIDTH)), 4, 18)
    const texts = data.points.map((point) => truncate(point.x, maxChars))
    const widest = Math.max(0, ...texts.map((label) => textWidth(label)))
    const every = Math.max(1, Math.ceil((widest + LABEL_GAP) / slot))
    const first = every > 1 ? Math.max(0, xs.findIndex((x) => x >= widest / 2)) : 0
    const candidates: Label[] = []
    for (let i = first; i < texts.length; i += every) candidates.push({ x: xs[i]!, text: texts[i]! })
    return fitLabels(candidates, width)
  }
  return { xs, spacing: slot, xLabels }
}

/** Points placed by their x value (bars inset by half a slot), labelled by nice numeric ticks that fit. */
function numericX(data: Series, left: number, right: number, bars: boolean) {
  const slot = (right - left) / Math.max(1, data.points.length)
  const inset = bars ? slot / 2 : PAD
  const minX = data.xValues[0] ?? 0
  const maxX = data.xValues.at(-1) ?? 0
  const x = linear(minX, maxX, left + inset, right - inset)
  const xs = data.xValues.map(x)
  let spacing = bars ? slot : right - left
  for (let i = 1; i < xs.length; i++) if (xs[i]! > xs[i - 1]!) spacing = Math.min(spacing, xs[i]! - xs[i - 1]!)
  const xLabels = (width: number) => {
    if (!(maxX > minX)) return data.points.length ? fitLabels([{ x: xs[0]!, text: formatCompact(minX) }], width) : []
    for (let intervals = clamp(Math.floor((right - left) / 70), 1, 10); ; intervals = Math.floor(intervals / 2)) {
      const scale = niceScale(minX, maxX, intervals)
      const inside = scale.ticks.filter((tick) => tick >= minX && tick <= maxX)
      const candidates = formatTicks(inside, scale.step).map((text, i) => ({ x: x(inside[i]!), text }))
      const labels = fitLabels(candidates, width)
      if (labels.length === candidates.length || intervals <= 1) return labels
    }
  }
  return { xs, spacing, xLabels }
}

/** Gridlines and tick labels of the y axis, the zero line and the x labels. */
export function axes(geometry: Plot, ink: string): Html {
  if (!geometry.axes) return html`<line class="axis" x1="${geometry.left}" y1="${geometry.zero}" x2="${geometry.right}" y2="${geometry.zero}" stroke="${ink}" stroke-opacity="0.5" />`
  const { scale } = geometry
  return html`<g class="grid" stroke="${ink}" stroke-opacity="0.15">${scale.ticks.map(
    (tick) => html`<line class="grid" x1="${geometry.left}" y1="${geometry.y(tick)}" x2="${geometry.right}" y2="${geometry.y(tick)}" />`,
  )}</g>
  <g class="y-axis" text-anchor="end" font-size="${FONT}" fill="${ink}">${scale.ticks.map(
    (tick, i) => html`<text class="tick" x="${round(geometry.left - LABEL_GAP)}" y="${round(geometry.y(tick) + FONT * 0.35)}">${scale.labels[i]}</text>`,
  )}</g>
  <line class="axis" x1="${geometry.left}" y1="${geometry.zero}" x2="${geometry.right}" y2="${geometry.zero}" stroke="${ink}" stroke-opacity="0.5" />
  <g class="x-axis" text-anchor="middle" font-size="${FONT}" fill="${ink}">${geometry.xLabels.map(
    (label) => html`<text class="x-label" x="${label.x}" y="${geometry.height - 8}">${label.text}</text>`,
  )}</g>`
}

/** The points of `full` at `indexes` (in order), with the bounds of the whole series. */
export function subseries(full: Series, indexes: number[]): Series {
  return { ...full, points: indexes.map((i) => full.points[i]!), xValues: full.numeric ? indexes.map((i) => full.xValues[i]!) : [] }
}
