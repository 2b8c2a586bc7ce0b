/**
 * The frame of every chart: each is drawn twice, for a desktop cell (`wide`) and for a phone
 * (`narrow`), and CHART_CSS shows one of them; both variants share the background, the aria label
 * and their data attributes. Pure functions of their arguments.
 */
import { html, Html } from '../../../src/http/html'
import type { ComponentDataOf } from '../model'
import { contrastText, NARROW_WIDTH, PAD, round, toneOf } from './common'
import { MIN_MARK_UNITS } from './marks'

/** A chart's data: what its frame reads of it. */
export type ChartData = ComponentDataOf<'barChart' | 'lineChart' | 'pieChart'>

const UNITS_PER_COLUMN = 50
const MIN_WIDE_WIDTH = 320
/** Bytes of a chart variant's marks (bars, points or slices with their tooltips and shapes); past them, groups of points are drawn. */
const MARK_BYTES = { wide: 48_000, narrow: 20_000 }

/** Shows the desktop drawing of each chart, and the phone drawing below 700 CSS px. */
export const CHART_CSS = `
.component-svg.chart.narrow { display: none; }
@media (max-width: 699px) {
  .component-svg.chart.wide { display: none; }
  .component-svg.chart.narrow { display: block; height: auto !important; }
}
`

/** Marks a variant of `width` units has room for. */
export const markRoom = (width: number) => Math.max(1, Math.floor((width - 2 * PAD) / MIN_MARK_UNITS))

/** Markup joined from strings whose user texts were escaped (see Mark). */
export const joined = (parts: string[]) => new Html(parts.join(''))

/** One variant of a chart: its class and viewBox, the attributes both variants share, the background and the drawing. */
function chartSvg(variant: string, width: number, data: ChartData, label: string, attributes: Html, body: Html): Html {
  return html`<svg class="component-svg chart ${variant}" data-type="${data.type}" data-tone="${toneOf(data.backgroundColor)}"${attributes} viewBox="0 0 ${width} ${data.height}" style="height:${data.height}px" role="img" aria-label="${label}">
  <rect class="background" width="${width}" height="${data.height}" rx="8" fill="${data.backgroundColor}" />
  ${body}
</svg>`
}

/** How a chart variant is drawn: its width, its ink and the bytes its marks may take. */
export type Draw = (width: number, ink: string, markBytes: number) => Html

/** Both variants of a chart: `wide` for the grid cell on a desktop, `narrow` for a phone; `scale` shrinks their mark budgets. */
export function variants(data: ChartData, columns: number, scale: number, label: string, attributes: Html, draw: Draw): Html {
  const ink = contrastText(data.backgroundColor)
  const wide = Math.max(MIN_WIDE_WIDTH, columns * UNITS_PER_COLUMN)
  return html`${chartSvg('wide', wide, data, label, attributes, draw(wide, ink, MARK_BYTES.wide * scale))}
${chartSvg('narrow', NARROW_WIDTH, data, label, attributes, draw(NARROW_WIDTH, ink, MARK_BYTES.narrow * scale))}`
}

/** The centered message of a chart without points. */
export function noPoints(width: number, height: number, ink: string): Html {
  return html`<text class="empty-message" x="${width / 2}" y="${round(height / 2)}" text-anchor="middle" dominant-baseline="middle" font-size="14" fill="${ink}">No points</text>`
}
