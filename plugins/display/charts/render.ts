/**
 * Server-side SVG of the five component types, honouring their colors, sizes and heights and
 * numeric vs text x-axes. Charts carry a y axis with nice ticks and gridlines, thinned x labels,
 * value labels where they fit, a `<title>` tooltip per bar, point and slice, and a pie legend;
 * each chart is drawn twice, for a desktop cell and for a phone, and CHART_CSS shows one of them.
 * Every text is escaped; colors were validated as hex on the way in. Each type is drawn by a pure
 * function of its own member of the ComponentData union (box.ts, bar.ts, line.ts, pie.ts).
 */
import { html, type Html } from '../../../src/http/html'
import type { ComponentDataOf, ComponentType } from '../model'
import { barChart } from './bar'
import { horizontalBox, verticalBox } from './box'
import { clamp, NARROW_WIDTH, TYPE_NAMES } from './common'
import { lineChart } from './line'
import { utf8Length } from './marks'
import { pieChart } from './pie'

export { contrastText, toneOf } from './common'
export { CHART_CSS } from './frame'

/**
 * A component's data as stored. POST /api/component stores only data valid against the schema of
 * the component's own type (model.ts), so the data of a component of type T is ComponentDataOf<T>.
 */
export type Data = { readonly type: string } & Readonly<Record<string, unknown>>

/** How the component is placed: its grid width in columns (1..24, default 12). */
export interface RenderOptions {
  columns?: number
}

const DEFAULT_COLUMNS = 12
/** Text of the empty state, which has no background of its own: readable on light and dark pages. */
const NEUTRAL_TEXT = '#6b7280'
/**
 * The most UTF-8 bytes of one component's SVG (both variants of a chart), however its data is
 * filled: at the default 100 components a page, with their cells and titles, a live page stays
 * under 8 MiB.
 */
export const MAX_FRAGMENT_BYTES = 80_000

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

/** The drawing of each type, from its own data. */
type Drawers = { [T in ComponentType]: (data: ComponentDataOf<T>, columns: number, scale: number) => Html }

const DRAWERS: Drawers = {
  horizontalBox: (data) => horizontalBox(data),
  verticalBox: (data) => verticalBox(data),
  barChart,
  lineChart,
  pieChart,
}

const isComponentType = (type: string): type is ComponentType => Object.hasOwn(DRAWERS, type)

/** Stored data of a component of type `type` (see Data): that type's member of the union. */
const dataOf = <T extends ComponentType>(_type: T, data: Data) => data as unknown as ComponentDataOf<T>

function draw<T extends ComponentType>(type: T, data: ComponentDataOf<T>, columns: number, scale: number): Html {
  const drawer: Drawers[T] = DRAWERS[type]
  return drawer(data, columns, scale)
}

/**
 * The SVG of a component's data (two variants for charts), or a placeholder before its first
 * update; never more than MAX_FRAGMENT_BYTES: a drawing past it is drawn again with smaller
 * mark budgets (charts summarise more).
 */
export function renderComponent(type: string, data: Data | null, options: RenderOptions = {}): Html {
  if (!data) return emptyState(type)
  if (!isComponentType(type)) throw new TypeError(`no drawing for the component type ${type}`)
  const columns = Number.isFinite(options.columns) ? clamp(Math.round(options.columns!), 1, 24) : DEFAULT_COLUMNS
  for (let scale = 1; scale > 0.01; scale *= 0.7) {
    const drawn = draw(type, dataOf(type, data), columns, scale)
    if (utf8Length(drawn.value) <= MAX_FRAGMENT_BYTES) return drawn
  }
  return tooLarge(type)
}
