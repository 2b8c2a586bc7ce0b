/**
 * Server-side SVG of the five component types, honouring their colors, sizes and heights and
 * numeric vs text x-axes. Charts carry a y axis with nice ticks and gridlines, thinned x labels,
 * value labels where they fit, a `<title>` tooltip per bar, point and slice, and a pie legend;
 * each chart is drawn twice, for a desktop cell and for a phone, and CHART_CSS shows one of them.
 * Every text is escaped; colors were validated as hex on the way in.
 */
import { escapeHtml, html, Html } from '../../src/http/html'
import { formatBoxValue, formatCompact, formatFull, formatPercent, formatTicks, formatValue, type NumberFormat } from './number-format'
import { escapedLength, fitMarks, mark, markLength, MIN_MARK_UNITS, PointMarks, truncate, utf8Length, type Group, type Mark, type Point } from './summary'

interface Text {
  value: string
  size: number
  color: string
}
/** A component's data as posted (already checked against the model of its type). */
export type Data = Record<string, any> & { type: string }
/** How the component is placed: its grid width in columns (1..24, default 12). */
export interface RenderOptions {
  columns?: number
}

const BOX_WIDTH = 600
const NARROW_WIDTH = 360
const UNITS_PER_COLUMN = 50
const MIN_WIDE_WIDTH = 320
const DEFAULT_COLUMNS = 12
const DARK_TEXT = '#1f2937'
const LIGHT_TEXT = '#e5e7eb'
/** Text of the empty state, which has no background of its own: readable on light and dark pages. */
const NEUTRAL_TEXT = '#6b7280'
/** Fill of pie points posted without a color: no red, no black, neighbours differ. */
const PALETTE = ['#4e79a7', '#f28e2b', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#9c755f', '#17becf', '#bcbd22', '#8c8c8c']
const FONT = 11
const CHAR_WIDTH = 0.6
const LABEL_GAP = 6
const PAD = 10
/** Below this height a chart shows only its marks: no axes, labels or gridlines. */
const MIN_AXES_HEIGHT = 72
const X_AXIS_ROOM = 22
const VALUE_ROOM = 14
const TICK_SPACING = 30
const MAX_BAR_WIDTH = 96
const MAX_VALUE_LABELS = 60
const MAX_SUMMARY_ITEMS = 10
const MAX_LEGEND_ROWS = 8
const LEGEND_ROW = 18
const SWATCH = 10
const MIN_LEGEND_WIDTH = 60
const MAX_LEGEND_WIDTH = 280
/**
 * The most UTF-8 bytes of one component's SVG (both variants of a chart), however its data is
 * filled: at the default 100 components a page, with their cells and titles, a live page stays
 * under 8 MiB.
 */
export const MAX_FRAGMENT_BYTES = 80_000
/** Bytes of a chart variant's marks (bars, points or slices with their tooltips and shapes); past them, groups of points are drawn. */
const MARK_BYTES = { wide: 48_000, narrow: 20_000 }
/** Bytes of a mark's shape besides its text: a bar; a circle with its stretch of line and area (a group's has two points); a slice. */
const BAR_SHAPE = { point: 80, group: 80 }
const LINE_SHAPE = { straight: { point: 105, group: 145 }, cubic: { point: 175, group: 285 } }
const SLICE_SHAPE = 110
/** A label in an aria summary is cut to this many characters (its tooltip carries it whole). */
const SUMMARY_LABEL_CHARS = 40
/** Fill of the slice that gathers the pie's smallest slices when they are too many to draw. */
const OTHERS_COLOR = '#9ca3af'
const TYPE_NAMES: Record<string, string> = {
  horizontalBox: 'Horizontal box',
  verticalBox: 'Vertical box',
  barChart: 'Bar chart',
  lineChart: 'Line chart',
  pieChart: 'Pie chart',
}

/** Shows the desktop drawing of each chart, and the phone drawing below 700 CSS px. */
export const CHART_CSS = `
.component-svg.chart.narrow { display: none; }
@media (max-width: 699px) {
  .component-svg.chart.wide { display: none; }
  .component-svg.chart.narrow { display: block; height: auto !important; }
}
`

const round = (value: number) => Math.round(value * 100) / 100
const clamp = (value: number, low: number, high: number) => Math.min(high, Math.max(low, value))

/** Estimated width of a text in SVG units: 0.6 em per character, 1 em for wide (CJK, emoji) ones. */
function textWidth(text: string, size = FONT): number {
  let ems = 0
  for (const character of text) ems += (character.codePointAt(0) ?? 0) >= 0x1100 ? 1 : CHAR_WIDTH
  return ems * size
}

/** WCAG relative luminance of a #rgb, #rgba, #rrggbb or #rrggbbaa color (alpha ignored). */
function luminance(hex: string): number {
  const digits = hex.slice(1)
  const full = digits.length <= 4 ? [...digits].map((digit) => digit + digit).join('') : digits
  const [r, g, b] = [0, 2, 4].map((at) => {
    const channel = parseInt(full.slice(at, at + 2), 16) / 255
    return channel <= 0.04045 ? channel / 12.92 : ((channel + 0.055) / 1.055) ** 2.4
  })
  return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!
}

const contrastRatio = (a: number, b: number) => (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)
const DARK_LUMINANCE = luminance(DARK_TEXT)
const LIGHT_LUMINANCE = luminance(LIGHT_TEXT)

/** The text color (dark #1f2937 or light #e5e7eb) that contrasts more with a hex background. */
export function contrastText(background: string): string {
  const own = luminance(background)
  return contrastRatio(own, DARK_LUMINANCE) >= contrastRatio(own, LIGHT_LUMINANCE) ? DARK_TEXT : LIGHT_TEXT
}

/**
 * `light` when a background wants dark text (by relative luminance), else `dark`. Each drawing
 * carries it as `data-tone`, so that in dark mode the live page gives a light component's cell a
 * light card and dark title (LIVE_CSS) instead of a white slab under light text.
 */
export const toneOf = (background: string): 'light' | 'dark' => (contrastText(background) === DARK_TEXT ? 'light' : 'dark')

/** "first, second, … and N more" of at most MAX_SUMMARY_ITEMS items (each cut to SUMMARY_LABEL_CHARS by its caller). */
function summaryList(items: string[]): string {
  const shown = items.slice(0, MAX_SUMMARY_ITEMS).join(', ')
  return items.length > MAX_SUMMARY_ITEMS ? `${shown} and ${items.length - MAX_SUMMARY_ITEMS} more` : shown
}

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`
/** A point as an aria summary names it: its x (cut) and its value. */
const summaryItem = (x: string, value: string) => `${truncate(x, SUMMARY_LABEL_CHARS)} ${value}`
/** Marks a variant of `width` units has room for. */
const markRoom = (width: number) => Math.max(1, Math.floor((width - 2 * PAD) / MIN_MARK_UNITS))

// ---- boxes -----------------------------------------------------------------------------------

/** One box text at (x, y): the posted size and color, a plain number in the box's format (compact unless `exact`). */
function text(part: string, value: Text, format: NumberFormat | undefined, x: number, y: number, anchor: 'start' | 'middle' | 'end'): Html {
  return html`<text class="${part}" x="${x}" y="${y}" text-anchor="${anchor}" dominant-baseline="middle" font-size="${value.size}" fill="${value.color}">${formatBoxValue(value.value, format)}</text>`
}

/** "Horizontal box: Orders, 1,204, +4%": the type and its non-empty texts as shown. */
function boxLabel(type: string, texts: Text[], format: NumberFormat | undefined): string {
  const shown = texts.map((part) => formatBoxValue(part.value, format).trim()).filter(Boolean)
  return `${TYPE_NAMES[type]}${shown.length ? `: ${shown.join(', ')}` : ''}`
}

/** Left, middle and right texts on the posted background. */
function horizontalBox(data: Data): Html {
  return html`<svg class="component-svg" data-type="horizontalBox" data-tone="${toneOf(data.backgroundColor)}" viewBox="0 0 ${BOX_WIDTH} 120" role="img" aria-label="${boxLabel('horizontalBox', [data.leftText, data.middleText, data.rightText], data.format)}">
  <rect class="background" width="${BOX_WIDTH}" height="120" rx="8" fill="${data.backgroundColor}" />
  ${text('left', data.leftText, data.format, 20, 60, 'start')}${text('middle', data.middleText, data.format, BOX_WIDTH / 2, 60, 'middle')}${text('right', data.rightText, data.format, BOX_WIDTH - 20, 60, 'end')}
</svg>`
}

/** Top and bottom texts on the posted background. */
function verticalBox(data: Data): Html {
  return html`<svg class="component-svg" data-type="verticalBox" data-tone="${toneOf(data.backgroundColor)}" viewBox="0 0 300 200" role="img" aria-label="${boxLabel('verticalBox', [data.topText, data.bottomText], data.format)}">
  <rect class="background" width="300" height="200" rx="8" fill="${data.backgroundColor}" />
  ${text('top', data.topText, data.format, 150, 66, 'middle')}${text('bottom', data.bottomText, data.format, 150, 140, 'middle')}
</svg>`
}

// ---- scales and labels -----------------------------------------------------------------------

interface Scale {
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
function niceScale(low: number, high: number, intervals: number): Scale {
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
function linear(low: number, high: number, from: number, to: number): (value: number) => number {
  const half = high / 2 - low / 2
  return (value: number) => (half > 0 ? round(from + ((value / 2 - low / 2) / half) * (to - from)) : round((from + to) / 2))
}

interface Label {
  x: number
  text: string
}

/** The labels (centered on x, in order) that fit inside 0..width without overlapping each other. */
function fitLabels(candidates: Label[], width: number): Label[] {
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

// ---- bar and line charts ---------------------------------------------------------------------

interface Series {
  /** In drawing order: by x on a numeric axis, as posted otherwise. */
  points: Point[]
  /** The x of each point as a number (numeric axis only). */
  xValues: number[]
  numeric: boolean
  low: number
  high: number
}

/** The points in drawing order, whether x is numeric (xNumber and every x a number) and the y bounds with 0. */
function series(data: Data): Series {
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
interface Plot {
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
function plot(data: Series, width: number, height: number, bars: boolean): Plot {
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
function axes(geometry: Plot, ink: string): Html {
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

/** Markup joined from strings whose user texts were escaped (see Mark). */
const joined = (parts: string[]) => new Html(parts.join(''))

/** One variant of a chart: its class and viewBox, the attributes both variants share, the background and the drawing. */
function chartSvg(variant: string, width: number, data: Data, label: string, attributes: Html, body: Html): Html {
  return html`<svg class="component-svg chart ${variant}" data-type="${data.type}" data-tone="${toneOf(data.backgroundColor)}"${attributes} viewBox="0 0 ${width} ${data.height}" style="height:${data.height}px" role="img" aria-label="${label}">
  <rect class="background" width="${width}" height="${data.height}" rx="8" fill="${data.backgroundColor}" />
  ${body}
</svg>`
}

/** How a chart variant is drawn: its width, its ink and the bytes its marks may take. */
type Draw = (width: number, ink: string, markBytes: number) => Html

/** Both variants of a chart: `wide` for the grid cell on a desktop, `narrow` for a phone; `scale` shrinks their mark budgets. */
function variants(data: Data, columns: number, scale: number, label: string, attributes: Html, draw: Draw): Html {
  const ink = contrastText(data.backgroundColor)
  const wide = Math.max(MIN_WIDE_WIDTH, columns * UNITS_PER_COLUMN)
  return html`${chartSvg('wide', wide, data, label, attributes, draw(wide, ink, MARK_BYTES.wide * scale))}
${chartSvg('narrow', NARROW_WIDTH, data, label, attributes, draw(NARROW_WIDTH, ink, MARK_BYTES.narrow * scale))}`
}

/** The points of `full` at `indexes` (in order), with the bounds of the whole series. */
function subseries(full: Series, indexes: number[]): Series {
  return { ...full, points: indexes.map((i) => full.points[i]!), xValues: full.numeric ? indexes.map((i) => full.xValues[i]!) : [] }
}

/** The centered message of a chart without points. */
function noPoints(width: number, height: number, ink: string): Html {
  return html`<text class="empty-message" x="${width / 2}" y="${round(height / 2)}" text-anchor="middle" dominant-baseline="middle" font-size="14" fill="${ink}">No points</text>`
}

/**
 * Bars from the zero line, their values above (below, if negative) when every value fits its
 * slot. More bars than fit (summary.ts) are drawn in groups: each group's bar is its peak.
 */
function barChart(data: Data, columns: number, scale: number): Html {
  const bars = series(data)
  const label = bars.points.length
    ? `Bar chart, ${plural(bars.points.length, 'bar')}: ${summaryList(bars.points.map((point) => summaryItem(point.x, formatValue(point.y, data.format))))}`
    : 'Bar chart, no points'
  const attributes = html` data-x-axis="${bars.numeric ? 'number' : 'text'}"`
  const singles = new PointMarks(bars.points)
  const values = bars.points.length <= MAX_VALUE_LABELS ? bars.points.map((point) => formatValue(point.y, data.format)) : []
  return variants(data, columns, scale, label, attributes, (width, ink, markBytes) => {
    if (!bars.points.length) return noPoints(width, data.height, ink)
    const fitted = fitMarks(bars.points, singles, markRoom(width), markBytes, BAR_SHAPE, 'bar')
    const shown = fitted.groups ? subseries(bars, fitted.groups.map((group) => group.peak)) : bars
    const marks = fitted.marks
    const geometry = plot(shown, width, data.height, true)
    const barWidth = round(Math.max(1, Math.min(geometry.spacing * 0.7, MAX_BAR_WIDTH)))
    const labelled = !fitted.groups && geometry.axes && values.length > 0 && values.every((value) => textWidth(value) + 2 <= geometry.spacing)
    return html`${axes(geometry, ink)}
  <g class="bars">${joined(
    shown.points.map((point, i) => {
      const y = geometry.y(point.y)
      return `<rect class="bar"${marks[i]!.attributes} x="${round(geometry.xs[i]! - barWidth / 2)}" y="${Math.min(y, geometry.zero)}" width="${barWidth}" height="${round(Math.abs(geometry.zero - y))}">${marks[i]!.title}</rect>`
    }),
  )}</g>
  ${labelled
    ? html`<g class="value-labels" text-anchor="middle" font-size="${FONT}" fill="${ink}">${bars.points.map((point, i) => {
        const y = geometry.y(point.y)
        return html`<text class="value-label" x="${geometry.xs[i]}" y="${round(point.y < 0 ? y + FONT + 2 : y - 4)}">${values[i]}</text>`
      })}</g>`
    : ''}`
  })
}

/**
 * Tangents of a monotone cubic through the points (Fritsch–Carlson, as d3's curveMonotoneX):
 * zero at a peak or a valley, never more than three times a neighbouring secant, so that no
 * segment leaves the range of the two points it joins. Points with equal x get a flat tangent.
 */
function monotoneTangents(coordinates: Array<[number, number]>): number[] {
  const last = coordinates.length - 1
  const widths = coordinates.slice(1).map(([x], i) => x - coordinates[i]![0])
  const secants = widths.map((width, i) => (width > 0 ? (coordinates[i + 1]![1] - coordinates[i]![1]) / width : 0))
  const tangents = coordinates.map((_, i) => {
    if (i === 0 || i === last) return 0
    const [before, after] = [secants[i - 1]!, secants[i]!]
    if (before * after <= 0) return 0
    const [left, right] = [widths[i - 1]!, widths[i]!]
    const weighted = (before * right + after * left) / (left + right)
    return Math.sign(before) * 2 * Math.min(Math.abs(before), Math.abs(after), 0.5 * Math.abs(weighted))
  })
  // The ends: one-sided, as d3 does (3s − t) / 2, which keeps the sign of the secant and stays within 3× it.
  tangents[0] = last === 1 ? secants[0]! : (3 * secants[0]! - tangents[1]!) / 2
  tangents[last] = last === 1 ? secants[0]! : (3 * secants[last - 1]! - tangents[last - 1]!) / 2
  return tangents
}

/** A smooth monotone curve through the points, as cubic Bézier segments whose control points stay between the points they join. */
function monotonePath(coordinates: Array<[number, number]>): string {
  if (coordinates.length < 3) return straightPath(coordinates)
  const tangents = monotoneTangents(coordinates)
  let path = `M ${coordinates[0]![0]} ${coordinates[0]![1]}`
  for (let i = 0; i < coordinates.length - 1; i++) {
    const [x1, y1] = coordinates[i]!
    const [x2, y2] = coordinates[i + 1]!
    const third = (x2 - x1) / 3
    // Rounding must not push a control point past its segment's ends (the curve stays in their hull).
    const within = (y: number) => clamp(round(y), Math.min(y1, y2), Math.max(y1, y2))
    path += ` C ${round(x1 + third)} ${within(y1 + third * tangents[i]!)}, ${round(x2 - third)} ${within(y2 - third * tangents[i + 1]!)}, ${x2} ${y2}`
  }
  return path
}

/** Straight segments through the points. */
const straightPath = (coordinates: Array<[number, number]>) => `M ${coordinates.map(([x, y]) => `${x} ${y}`).join(' L ')}`

/** The path through each group: its lowest and highest points in their order (the line keeps its envelope); a circle marks each group's peak. */
function groupPath(groups: Group[]): { indexes: number[]; circles: number[] } {
  const indexes: number[] = []
  const circles: number[] = []
  for (const group of groups) {
    const pair = group.lowest === group.highest ? [group.lowest] : [Math.min(group.lowest, group.highest), Math.max(group.lowest, group.highest)]
    for (const i of pair) {
      if (i === group.peak) circles.push(indexes.length)
      indexes.push(i)
    }
  }
  return { indexes, circles }
}

/** A straight or cubic line through the points, its area filled down (or up) to the zero line; more points than fit are drawn in groups. */
function lineChart(data: Data, columns: number, scale: number): Html {
  const line = series(data)
  const count = line.points.length
  const label =
    count === 0
      ? 'Line chart, no points'
      : count === 1
        ? `Line chart, 1 point: ${formatValue(line.points[0]!.y, data.format)}`
        : `Line chart, ${count} points from ${formatValue(Math.min(...line.points.map((point) => point.y)), data.format)} to ${formatValue(Math.max(...line.points.map((point) => point.y)), data.format)}`
  const attributes = html` data-curve="${data.cubic ? 'cubic' : 'straight'}" data-x-axis="${line.numeric ? 'number' : 'text'}"`
  const singles = new PointMarks(line.points)
  return variants(data, columns, scale, label, attributes, (width, ink, markBytes) => {
    if (!count) return noPoints(width, data.height, ink)
    const fitted = fitMarks(line.points, singles, markRoom(width), markBytes, data.cubic ? LINE_SHAPE.cubic : LINE_SHAPE.straight, 'point')
    const grouped = fitted.groups ? groupPath(fitted.groups) : null
    const shown = grouped ? subseries(line, grouped.indexes) : line
    const geometry = plot(shown, width, data.height, false)
    const coordinates = shown.points.map((point, i) => [geometry.xs[i]!, geometry.y(point.y)] as [number, number])
    const path = data.cubic ? monotonePath(coordinates) : straightPath(coordinates)
    const area = `${path} L ${coordinates.at(-1)![0]} ${geometry.zero} L ${coordinates[0]![0]} ${geometry.zero} Z`
    const radius = round(clamp(geometry.spacing / 4, 1.5, 4))
    const circles = grouped ? grouped.circles : coordinates.map((_, i) => i)
    return html`${axes(geometry, ink)}
  <path class="area" d="${area}" fill="${data.fillColor}" fill-opacity="0.35" stroke="none" />
  <path class="line" d="${path}" fill="none" stroke="${line.points[0]!.color}" stroke-width="2" />
  <g class="points">${joined(
    circles.map((at, i) => `<circle class="point"${fitted.marks[i]!.attributes} cx="${coordinates[at]![0]}" cy="${coordinates[at]![1]}" r="${radius}">${fitted.marks[i]!.title}</circle>`),
  )}</g>`
  })
}

// ---- pie chart -------------------------------------------------------------------------------

interface Slice {
  point: Point
  color: string
  /** "60%", "<0.1%", "0%" or "—". */
  percent: string
  /** Its tooltip and attributes (made when first asked for: most slices of a large pie are never drawn). */
  readonly mark: Mark
}

/** Each point with its color (a palette color when posted without one) and its share of the positive total. */
function slices(points: Point[]): { slices: Slice[]; total: number } {
  const total = points.reduce((sum, point) => sum + Math.max(0, point.y), 0)
  return {
    total,
    slices: points.map((point, i) => {
      const color = point.color || PALETTE[i % PALETTE.length]!
      const percent = formatPercent(point.y, total)
      let made: Mark | undefined
      return {
        point,
        color,
        percent,
        get mark() {
          return (made ??= mark(point, color, ` (${percent})`))
        },
      }
    }),
  }
}

/** The legend rows that fit: every point in order, or the largest ones and a "N more" row. */
function legendRows(all: Slice[], height: number): { rows: Slice[]; more: number } {
  const fit = Math.floor((height - 2 * PAD) / LEGEND_ROW)
  if (all.length <= Math.min(fit, MAX_LEGEND_ROWS)) return { rows: all, more: 0 }
  const shown = Math.max(0, Math.min(fit - 1, MAX_LEGEND_ROWS))
  const rows = all
    .map((slice, i) => ({ slice, i }))
    .sort((a, b) => b.slice.point.y - a.slice.point.y || a.i - b.i)
    .slice(0, shown)
    .map((entry) => entry.slice)
  return { rows, more: all.length - shown }
}

/** Swatch, "Name 60%" and the value of each row, right of the pie. */
function legend(rows: Slice[], more: number, x: number, width: number, height: number, ink: string, format: NumberFormat | undefined): Html {
  const count = rows.length + (more ? 1 : 0)
  const top = round((height - count * LEGEND_ROW) / 2)
  const valueRight = round(x + width)
  return html`<g class="legend" font-size="${FONT}" fill="${ink}">${rows.map((slice, i) => {
    const y = top + i * LEGEND_ROW
    const value = formatValue(slice.point.y, format)
    const room = width - SWATCH - LABEL_GAP * 2 - textWidth(value) - textWidth(` ${slice.percent}`)
    const name = truncate(slice.point.x, Math.max(1, Math.floor(room / (FONT * CHAR_WIDTH))))
    return html`<g class="legend-row">${new Html(slice.mark.title)}<rect class="swatch" x="${x}" y="${round(y + 4)}" width="${SWATCH}" height="${SWATCH}" rx="2" fill="${slice.color}" /><text class="legend-label" x="${x + SWATCH + LABEL_GAP}" y="${round(y + 13)}">${name} ${slice.percent}</text><text class="legend-value" x="${valueRight}" y="${round(y + 13)}" text-anchor="end" fill-opacity="0.75">${value}</text></g>`
  })}${more ? html`<text class="legend-more" x="${x + SWATCH + LABEL_GAP}" y="${round(top + rows.length * LEGEND_ROW + 13)}">${rows.length ? `${more} more` : plural(more, 'item')}</text>` : ''}</g>`
}

/** The slice from angle `start` to `end` (radians), with its tooltip: a circle when it is the whole pie. */
function sliceShape(slice: Slice, cx: number, cy: number, radius: number, start: number, end: number): string {
  const { attributes, title } = slice.mark
  if (end - start >= 2 * Math.PI - 1e-6) return `<circle class="slice"${attributes} cx="${cx}" cy="${cy}" r="${radius}">${title}</circle>`
  const large = end - start > Math.PI ? 1 : 0
  const [x1, y1] = [round(cx + radius * Math.cos(start)), round(cy + radius * Math.sin(start))]
  const [x2, y2] = [round(cx + radius * Math.cos(end)), round(cy + radius * Math.sin(end))]
  return `<path class="slice"${attributes} d="M ${cx} ${cy} L ${x1} ${y1} A ${radius} ${radius} 0 ${large} 1 ${x2} ${y2} Z">${title}</path>`
}

/** The percent of a slice written on it, when the slice is wide enough to hold it. */
function sliceLabel(slice: Slice, cx: number, cy: number, radius: number, start: number, end: number): Html | '' {
  if (radius < 40 || (end - start) * radius * 0.62 < textWidth(slice.percent) + LABEL_GAP) return ''
  const middle = (start + end) / 2
  const x = round(cx + radius * 0.62 * Math.cos(middle))
  const y = round(cy + radius * 0.62 * Math.sin(middle))
  return html`<text class="slice-label" x="${x}" y="${round(y + FONT * 0.35)}" text-anchor="middle" font-size="${FONT}" fill="${contrastText(slice.color)}">${slice.percent}</text>`
}

/** Bytes of a slice's mark, counted without making it. */
const sliceBytes = (slice: Slice) => markLength(slice.point, slice.color, ` (${slice.percent})`)

/** The slice gathering `count` slices worth `value` of a pie's `total`: "N others". */
function othersSlice(count: number, value: number, total: number): Slice {
  const percent = formatPercent(value, total)
  return {
    point: { x: `${count} others`, y: value, color: OTHERS_COLOR },
    color: OTHERS_COLOR,
    percent,
    mark: {
      attributes: ` data-x="${count} others" data-y="${escapeHtml(String(value))}" data-count="${count}" fill="${OTHERS_COLOR}"`,
      title: `<title>${count} others: ${escapeHtml(`${formatFull(value)} (${percent})`)}</title>`,
    },
  }
}

/** The positive slices of a pie with what fitting them needs: each one's bytes, and their order from the largest. */
interface PieSlices {
  slices: Slice[]
  bytes: number[]
  largest: number[]
  total: number
}

/**
 * The slices a variant draws: every positive one while `room` slices and `budget` bytes hold them
 * all, otherwise the largest ones (in their order) and one slice gathering the rest, "N others".
 */
function fitSlices(pie: PieSlices, room: number, budget: number): Slice[] {
  const { slices: positive, bytes, largest } = pie
  if (positive.length <= room && bytes.reduce((sum, size) => sum + size, 0) + positive.length * SLICE_SHAPE <= budget) return positive
  // The most slices (the largest, then "others") whose bytes fit; "others" is about 200 bytes and is measured below.
  let count = 1
  for (let kept = 0; count < Math.min(room, positive.length) && kept + bytes[largest[count - 1]!]! + 200 + (count + 1) * SLICE_SHAPE <= budget; count++) kept += bytes[largest[count - 1]!]!
  for (;;) {
    const kept = new Set(largest.slice(0, count - 1))
    let rest = 0
    for (const [i, slice] of positive.entries()) if (!kept.has(i)) rest += slice.point.y
    const others = othersSlice(positive.length - kept.size, rest, pie.total)
    const size = [...kept].reduce((sum, i) => sum + bytes[i]!, sliceBytes(others)) + count * SLICE_SHAPE
    if (size <= budget || count === 1) return [...positive.filter((_, i) => kept.has(i)), others]
    count--
  }
}

/** Slices of the positive values from 12 o'clock clockwise, and a legend of every point beside the pie. */
function pieChart(data: Data, columns: number, scale: number): Html {
  const points: Point[] = data.points
  const height: number = data.height
  const pie = slices(points)
  const positive = pie.slices.filter((slice) => slice.point.y > 0)
  const fitting: PieSlices = {
    slices: positive,
    bytes: positive.map(sliceBytes),
    largest: positive.map((_, i) => i).sort((a, b) => positive[b]!.point.y - positive[a]!.point.y || a - b),
    total: pie.total,
  }
  const label = points.length ? `Pie chart: ${summaryList(pie.slices.map((slice) => summaryItem(slice.point.x, slice.percent)))}` : 'Pie chart, no points'
  const { rows, more } = legendRows(pie.slices, height)
  const legendContent = Math.max(
    textWidth(`${more} more`),
    ...rows.map((slice) => textWidth(`${slice.point.x} ${slice.percent}`) + textWidth(formatValue(slice.point.y, data.format))),
  ) + SWATCH + 3 * LABEL_GAP
  return variants(data, columns, scale, label, html``, (width, ink, markBytes) => {
    if (!points.length) return noPoints(width, height, ink)
    const legendWidth = round(clamp(legendContent, MIN_LEGEND_WIDTH, Math.min(width * 0.45, MAX_LEGEND_WIDTH)))
    const radius = round(Math.max(2, Math.min(width - legendWidth - 4 * PAD, height - 2 * PAD) / 2))
    const cx = round(Math.max(PAD, (width - 2 * radius - 2 * PAD - legendWidth) / 2) + radius)
    const cy = round(height / 2)
    const key = legend(rows, more, cx + radius + 2 * PAD, legendWidth, height, ink, data.format)
    const drawn = fitSlices(fitting, Math.max(1, Math.floor((2 * Math.PI * radius) / MIN_MARK_UNITS)), markBytes - utf8Length(key.value))
    const shapes: string[] = []
    const labels: Array<Html | ''> = []
    let angle = -Math.PI / 2
    for (const slice of drawn) {
      const end = angle + (slice.point.y / pie.total) * 2 * Math.PI
      shapes.push(sliceShape(slice, cx, cy, radius, angle, end))
      labels.push(sliceLabel(slice, cx, cy, radius, angle, end))
      angle = end
    }
    return html`${pie.total > 0 ? '' : html`<circle class="no-slices" cx="${cx}" cy="${cy}" r="${radius}" fill="none" stroke="${ink}" stroke-opacity="0.3" stroke-dasharray="4 4" />`}
  <g class="slices">${joined(shapes)}</g>
  <g class="slice-labels">${labels}</g>
  ${key}`
  })
}

// ---- entry point -----------------------------------------------------------------------------

/** The placeholder of a component that never received data. */
function emptyState(type: string): Html {
  return html`<svg class="component-svg empty" data-type="${type}" viewBox="0 0 ${NARROW_WIDTH} 72" style="height:72px" role="img" aria-label="${TYPE_NAMES[type] ?? type}, no data yet">
  <rect class="frame" x="1" y="1" width="${NARROW_WIDTH - 2}" height="70" rx="8" fill="none" stroke="${NEUTRAL_TEXT}" stroke-opacity="0.5" stroke-dasharray="6 4" />
  <text class="empty-message" x="${NARROW_WIDTH / 2}" y="30" text-anchor="middle" font-size="15" font-weight="600" fill="${NEUTRAL_TEXT}">No data yet</text>
  <text class="empty-hint" x="${NARROW_WIDTH / 2}" y="50" text-anchor="middle" font-size="11" fill="${NEUTRAL_TEXT}">Waiting for the first POST /api/component</text>
</svg>`
}

/** What is drawn in place of data that cannot be drawn within MAX_FRAGMENT_BYTES (never seen with the posted limits: a last guard). */
function tooLarge(type: string): Html {
  return html`<svg class="component-svg empty" data-type="${type}" viewBox="0 0 ${NARROW_WIDTH} 72" style="height:72px" role="img" aria-label="${TYPE_NAMES[type] ?? type}, too large to draw">
  <text class="empty-message" x="${NARROW_WIDTH / 2}" y="40" text-anchor="middle" font-size="15" font-weight="600" fill="${NEUTRAL_TEXT}">Too large to draw</text>
</svg>`
}

const RENDERERS: Record<string, (data: Data, columns: number, scale: number) => Html> = {
  horizontalBox: (data) => horizontalBox(data),
  verticalBox: (data) => verticalBox(data),
  barChart,
  lineChart,
  pieChart,
}

/**
 * The SVG of a component's data (two variants for charts), or a placeholder before its first
 * update; never more than MAX_FRAGMENT_BYTES: a drawing past it is drawn again with smaller
 * mark budgets (charts summarise more).
 */
export function renderComponent(type: string, data: Data | null, options: RenderOptions = {}): Html {
  if (!data) return emptyState(type)
  const columns = Number.isFinite(options.columns) ? clamp(Math.round(options.columns!), 1, 24) : DEFAULT_COLUMNS
  for (let scale = 1; scale > 0.01; scale *= 0.7) {
    const drawn = RENDERERS[type]!(data, columns, scale)
    if (utf8Length(drawn.value) <= MAX_FRAGMENT_BYTES) return drawn
  }
  return tooLarge(type)
}
