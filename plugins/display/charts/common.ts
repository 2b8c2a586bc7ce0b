/**
 * What every drawing shares: its measures (font, gaps, padding, a phone's width), how wide a text
 * is estimated, the text color that contrasts with a background, and the words of the aria
 * summaries. Pure functions of their arguments.
 */
import { truncate } from './marks'

export const NARROW_WIDTH = 360
const DARK_TEXT = '#1f2937'
const LIGHT_TEXT = '#e5e7eb'
export const FONT = 11
export const CHAR_WIDTH = 0.6
export const LABEL_GAP = 6
export const PAD = 10
const MAX_SUMMARY_ITEMS = 10
/** A label in an aria summary is cut to this many characters (its tooltip carries it whole). */
const SUMMARY_LABEL_CHARS = 40
/** The names of the component types, as aria labels say them. */
export const TYPE_NAMES: Record<string, string> = {
  horizontalBox: 'Horizontal box',
  verticalBox: 'Vertical box',
  barChart: 'Bar chart',
  lineChart: 'Line chart',
  pieChart: 'Pie chart',
}

export const round = (value: number) => Math.round(value * 100) / 100
export const clamp = (value: number, low: number, high: number) => Math.min(high, Math.max(low, value))

/** Estimated width of a text in SVG units: 0.6 em per character, 1 em for wide (CJK, emoji) ones. */
export function textWidth(text: string, size = FONT): number {
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
export function summaryList(items: string[]): string {
  const shown = items.slice(0, MAX_SUMMARY_ITEMS).join(', ')
  return items.length > MAX_SUMMARY_ITEMS ? `${shown} and ${items.length - MAX_SUMMARY_ITEMS} more` : shown
}

export const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`
/** A point as an aria summary names it: its x (cut) and its value. */
export const summaryItem = (x: string, value: string) => `${truncate(x, SUMMARY_LABEL_CHARS)} ${value}`
