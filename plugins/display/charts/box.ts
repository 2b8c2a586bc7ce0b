/** The two boxes: texts on a background, numbers in the component's format. Pure functions of their data. */
import { html, type Html } from '../../../src/http/html'
import type { ComponentDataOf } from '../model'
import { TYPE_NAMES, toneOf } from './common'
import { formatBoxValue, type NumberFormat } from './number-format'

type Text = ComponentDataOf<'horizontalBox'>['leftText']

const BOX_WIDTH = 600

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
export function horizontalBox(data: ComponentDataOf<'horizontalBox'>): Html {
  return html`<svg class="component-svg" data-type="horizontalBox" data-tone="${toneOf(data.backgroundColor)}" viewBox="0 0 ${BOX_WIDTH} 120" role="img" aria-label="${boxLabel('horizontalBox', [data.leftText, data.middleText, data.rightText], data.format)}">
  <rect class="background" width="${BOX_WIDTH}" height="120" rx="8" fill="${data.backgroundColor}" />
  ${text('left', data.leftText, data.format, 20, 60, 'start')}${text('middle', data.middleText, data.format, BOX_WIDTH / 2, 60, 'middle')}${text('right', data.rightText, data.format, BOX_WIDTH - 20, 60, 'end')}
</svg>`
}

/** Top and bottom texts on the posted background. */
export function verticalBox(data: ComponentDataOf<'verticalBox'>): Html {
  return html`<svg class="component-svg" data-type="verticalBox" data-tone="${toneOf(data.backgroundColor)}" viewBox="0 0 300 200" role="img" aria-label="${boxLabel('verticalBox', [data.topText, data.bottomText], data.format)}">
  <rect class="background" width="300" height="200" rx="8" fill="${data.backgroundColor}" />
  ${text('top', data.topText, data.format, 150, 66, 'middle')}${text('bottom', data.bottomText, data.format, 150, 140, 'middle')}
</svg>`
}
