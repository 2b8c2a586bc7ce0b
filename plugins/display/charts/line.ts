/** The line chart: a pure function of its data, its width in columns and its mark budgets' scale. */
import { html, type Html } from '../../../src/http/html'
import type { ComponentDataOf } from '../model'
import { axes, plot, series, subseries } from './bar-line'
import { clamp, round } from './common'
import { joined, markRoom, noPoints, variants } from './frame'
import { fitMarks, PointMarks, type Group } from './marks'
import { formatValue } from './number-format'

/** Bytes of a point's shape besides its mark's text: a circle with its stretch of line and area (a group's has two points). */
const LINE_SHAPE = { straight: { point: 105, group: 145 }, cubic: { point: 175, group: 285 } }

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
export function lineChart(data: ComponentDataOf<'lineChart'>, columns: number, scale: number): Html {
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
