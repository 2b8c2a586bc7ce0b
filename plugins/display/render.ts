/**
 * Server-side SVG of the five component types, honouring their colors, sizes and heights and
 * numeric vs text x-axes. Every text is escaped; colors were validated as hex on the way in.
 */
import { html, type Html } from '../../src/http/html'

interface Text {
  value: string
  size: number
  color: string
}
interface Point {
  x: string
  y: number
  color: string
}
type Data = Record<string, any> & { type: string }

const WIDTH = 600
const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac']
const round = (value: number) => Math.round(value * 100) / 100

function text(part: string, value: Text, x: number, y: number, anchor: 'start' | 'middle' | 'end'): Html {
  return html`<text class="${part}" x="${x}" y="${y}" text-anchor="${anchor}" dominant-baseline="middle" font-size="${value.size}" fill="${value.color}">${value.value}</text>`
}

function horizontalBox(data: Data): Html {
  return html`<svg class="component-svg" data-type="horizontalBox" viewBox="0 0 ${WIDTH} 120" role="img">
  <rect class="background" width="${WIDTH}" height="120" rx="8" fill="${data.backgroundColor}" />
  ${text('left', data.leftText, 20, 60, 'start')}${text('middle', data.middleText, WIDTH / 2, 60, 'middle')}${text('right', data.rightText, WIDTH - 20, 60, 'end')}
</svg>`
}

function verticalBox(data: Data): Html {
  return html`<svg class="component-svg" data-type="verticalBox" viewBox="0 0 300 200" role="img">
  <rect class="background" width="300" height="200" rx="8" fill="${data.backgroundColor}" />
  ${text('top', data.topText, 150, 66, 'middle')}${text('bottom', data.bottomText, 150, 140, 'middle')}
</svg>`
}

/** Plot geometry shared by the bar and line charts: x and y of each point in SVG units. */
function plot(data: Data) {
  const height: number = data.height
  const points: Point[] = data.points
  const left = 48
  const right = WIDTH - 16
  const top = 16
  const bottom = height - 28
  const ys = points.map((point) => point.y)
  const low = Math.min(0, ...ys)
  const high = Math.max(0, ...ys)
  const span = high - low || 1
  const yOf = (y: number) => round(bottom - ((y - low) / span) * (bottom - top))
  const numeric = Boolean(data.xNumber) && points.every((point) => Number.isFinite(Number(point.x)))
  const ordered = numeric ? [...points].sort((a, b) => Number(a.x) - Number(b.x)) : points
  const xs = ordered.map((point) => Number(point.x))
  const minX = numeric ? Math.min(...xs) : 0
  const maxX = numeric ? Math.max(...xs) : 0
  const slot = (right - left) / Math.max(1, ordered.length)
  const xOf = (point: Point, index: number) =>
    numeric ? round(left + (maxX === minX ? (right - left) / 2 : ((Number(point.x) - minX) / (maxX - minX)) * (right - left))) : round(left + slot * (index + 0.5))
  return { height, left, right, bottom, zero: yOf(0), ordered, xOf, yOf, slot, numeric }
}

function axes(geometry: ReturnType<typeof plot>): Html {
  return html`<line class="axis" x1="${geometry.left}" y1="${geometry.zero}" x2="${geometry.right}" y2="${geometry.zero}" stroke="currentColor" stroke-opacity="0.4" />`
}

function labels(geometry: ReturnType<typeof plot>): Html {
  return html`${geometry.ordered.map(
    (point, i) => html`<text class="x-label" x="${geometry.xOf(point, i)}" y="${geometry.height - 8}" text-anchor="middle" font-size="12" fill="currentColor">${point.x}</text>`,
  )}`
}

function barChart(data: Data): Html {
  const geometry = plot(data)
  const barWidth = round(Math.max(2, (geometry.numeric ? (geometry.right - geometry.left) / Math.max(1, geometry.ordered.length) : geometry.slot) * 0.6))
  return html`<svg class="component-svg" data-type="barChart" data-x-axis="${geometry.numeric ? 'number' : 'text'}" viewBox="0 0 ${WIDTH} ${geometry.height}" style="height:${geometry.height}px" role="img">
  <rect class="background" width="${WIDTH}" height="${geometry.height}" rx="8" fill="${data.backgroundColor}" />
  ${axes(geometry)}
  ${geometry.ordered.map((point, i) => {
    const y = geometry.yOf(point.y)
    return html`<rect class="bar" data-x="${point.x}" data-y="${point.y}" x="${round(geometry.xOf(point, i) - barWidth / 2)}" y="${Math.min(y, geometry.zero)}" width="${barWidth}" height="${round(Math.abs(geometry.zero - y))}" fill="${point.color}" />`
  })}
  ${labels(geometry)}
</svg>`
}

/** A Catmull-Rom curve through the points, as cubic Bézier segments. */
function cubicPath(coordinates: Array<[number, number]>): string {
  if (coordinates.length < 3) return `M ${coordinates.map(([x, y]) => `${x} ${y}`).join(' L ')}`
  let path = `M ${coordinates[0]![0]} ${coordinates[0]![1]}`
  for (let i = 0; i < coordinates.length - 1; i++) {
    const [x0, y0] = coordinates[Math.max(0, i - 1)]!
    const [x1, y1] = coordinates[i]!
    const [x2, y2] = coordinates[i + 1]!
    const [x3, y3] = coordinates[Math.min(coordinates.length - 1, i + 2)]!
    path += ` C ${round(x1 + (x2 - x0) / 6)} ${round(y1 + (y2 - y0) / 6)}, ${round(x2 - (x3 - x1) / 6)} ${round(y2 - (y3 - y1) / 6)}, ${x2} ${y2}`
  }
  return path
}

function lineChart(data: Data): Html {
  const geometry = plot(data)
  const coordinates = geometry.ordered.map((point, i) => [geometry.xOf(point, i), geometry.yOf(point.y)] as [number, number])
  const line = coordinates.length === 0 ? '' : data.cubic ? cubicPath(coordinates) : `M ${coordinates.map(([x, y]) => `${x} ${y}`).join(' L ')}`
  const area = coordinates.length ? `${line} L ${coordinates.at(-1)![0]} ${geometry.zero} L ${coordinates[0]![0]} ${geometry.zero} Z` : ''
  return html`<svg class="component-svg" data-type="lineChart" data-curve="${data.cubic ? 'cubic' : 'straight'}" data-x-axis="${geometry.numeric ? 'number' : 'text'}" viewBox="0 0 ${WIDTH} ${geometry.height}" style="height:${geometry.height}px" role="img">
  <rect class="background" width="${WIDTH}" height="${geometry.height}" rx="8" fill="${data.backgroundColor}" />
  ${axes(geometry)}
  ${area ? html`<path class="area" d="${area}" fill="${data.fillColor}" fill-opacity="0.35" stroke="none" />` : ''}
  ${line ? html`<path class="line" d="${line}" fill="none" stroke="${geometry.ordered[0]?.color ?? '#000'}" stroke-width="2" />` : ''}
  ${geometry.ordered.map((point, i) => html`<circle class="point" data-x="${point.x}" data-y="${point.y}" cx="${coordinates[i]![0]}" cy="${coordinates[i]![1]}" r="4" fill="${point.color}" />`)}
  ${labels(geometry)}
</svg>`
}

function pieChart(data: Data): Html {
  const height: number = data.height
  const points: Point[] = data.points
  const radius = Math.max(4, Math.min(WIDTH, height) / 2 - 12)
  const cx = WIDTH / 2
  const cy = height / 2
  const total = points.reduce((sum, point) => sum + Math.max(0, point.y), 0)
  let angle = -Math.PI / 2
  const slices = points.map((point, i) => {
    const share = total > 0 ? Math.max(0, point.y) / total : 0
    const color = point.color || PALETTE[i % PALETTE.length]!
    const start = angle
    angle += share * 2 * Math.PI
    if (share >= 0.9999)
      return html`<circle class="slice" data-x="${point.x}" data-y="${point.y}" cx="${cx}" cy="${cy}" r="${radius}" fill="${color}" />`
    const large = share > 0.5 ? 1 : 0
    const [x1, y1] = [round(cx + radius * Math.cos(start)), round(cy + radius * Math.sin(start))]
    const [x2, y2] = [round(cx + radius * Math.cos(angle)), round(cy + radius * Math.sin(angle))]
    return html`<path class="slice" data-x="${point.x}" data-y="${point.y}" d="M ${cx} ${cy} L ${x1} ${y1} A ${radius} ${radius} 0 ${large} 1 ${x2} ${y2} Z" fill="${color}" />`
  })
  return html`<svg class="component-svg" data-type="pieChart" viewBox="0 0 ${WIDTH} ${height}" style="height:${height}px" role="img">
  <rect class="background" width="${WIDTH}" height="${height}" rx="8" fill="${data.backgroundColor}" />
  ${slices}
</svg>`
}

const RENDERERS: Record<string, (data: Data) => Html> = { horizontalBox, verticalBox, barChart, lineChart, pieChart }

/** The SVG of a component's data, or a placeholder before its first update. */
export function renderComponent(type: string, data: Data | null): Html {
  if (!data) return html`<svg class="component-svg empty" data-type="${type}" viewBox="0 0 ${WIDTH} 80" role="img"><text x="${WIDTH / 2}" y="40" text-anchor="middle" dominant-baseline="middle" font-size="14" fill="currentColor" fill-opacity="0.6">No data yet</text></svg>`
  return RENDERERS[type]!(data)
}
