/**
 * Large series drawn within bounds. A chart variant shows every point while the points fit: one
 * mark per MIN_MARK_UNITS of width, and their marks (tooltips, data attributes, shapes) within
 * the variant's byte budget. Otherwise it shows groups of consecutive points, each drawn as one
 * mark at the group's peak (its value farthest from zero) with a tooltip naming the group's first
 * and last x, its range and its size. So a component's drawing stays bounded however its 1,000
 * points and 200-character labels are filled (render.ts checks the whole fragment once more).
 */
import { escapeHtml } from '../../../src/http/html'
import { formatFull } from './number-format'

export interface Point {
  x: string
  y: number
  color: string
}

/**
 * What the mark of a point carries in both variants, escaped once: data-x, data-y, fill and the
 * `<title>` tooltip. Marks are joined as plain strings: one `html` call per mark would dominate
 * the render time of a 1,000-point chart.
 */
export interface Mark {
  attributes: string
  title: string
}

/** Width units a mark needs at least: more points than the width has room for are grouped. */
export const MIN_MARK_UNITS = 2
/** A group's tooltip cuts its first and last x to this many characters. */
const GROUP_LABEL_CHARS = 60

/** Whether a surrogate pair starts at `at`. */
const pairAt = (text: string, at: number) => {
  const code = text.charCodeAt(at)
  return code >= 0xd800 && code <= 0xdbff && at + 1 < text.length && (text.charCodeAt(at + 1) & 0xfc00) === 0xdc00
}

/** UTF-8 bytes of `text` (a lone surrogate counts 3, as TextEncoder writes U+FFFD for it). */
export function utf8Length(text: string): number {
  let bytes = text.length
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x80) continue
    if (code < 0x800) bytes += 1
    else if (pairAt(text, i)) {
      bytes += 2
      i++
    } else bytes += 2
  }
  return bytes
}

/** The index after the character (code point) that starts at `at`. */
const nextCharacter = (text: string, at: number) => (pairAt(text, at) ? at + 2 : at + 1)

/** `text` cut to `max` characters (code points), the last one an ellipsis. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text
  let end = 0
  for (let count = 0; count < max - 1; count++) end = nextCharacter(text, end)
  // Up to two characters after the first max - 1: is there more than one?
  const next = nextCharacter(text, end)
  if (next >= text.length) return text
  return `${text.slice(0, end).trimEnd()}…`
}

/** The mark of a point: its fill and its tooltip "<x>: <formatted value><suffix>". */
export function mark(point: Point, fill: string, suffix = ''): Mark {
  const x = escapeHtml(point.x)
  return {
    attributes: ` data-x="${x}" data-y="${escapeHtml(String(point.y))}" fill="${escapeHtml(fill)}"`,
    title: `<title>${x}: ${escapeHtml(formatFull(point.y) + suffix)}</title>`,
  }
}

const markBytes = (mark: Mark) => utf8Length(mark.attributes) + utf8Length(mark.title)

/** UTF-8 bytes of `text` once escaped by escapeHtml, without building it. */
export function escapedLength(text: string): number {
  let bytes = text.length
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code >= 0x80) {
      if (code < 0x800) bytes += 1
      else if (pairAt(text, i)) {
        bytes += 2
        i++
      } else bytes += 2
    } else if (code === 34) bytes += 5 // &quot;
    else if (code === 38 || code === 39 || code === 96) bytes += 4 // &amp; &#39; &#96;
    else if (code === 60 || code === 62) bytes += 3 // &lt; &gt;
  }
  return bytes
}

/** Bytes of a point's mark besides its texts: ` data-x="" data-y="" fill=""` and `<title>: </title>`. */
const MARK_FRAME = 45

/** Bytes of `mark(point, fill, suffix)`, counted without making it. */
export const markLength = (point: Point, fill: string, suffix = '') =>
  MARK_FRAME + 2 * escapedLength(point.x) + escapedLength(String(point.y)) + escapedLength(fill) + escapedLength(formatFull(point.y) + suffix)
/** About the bytes of a group's mark besides its two labels (its data-y, data-count, fill, range and size); its true size is checked after. */
const GROUP_FRAME = 140

/** Consecutive points `first..last` of a series drawn as one mark, by index: its lowest, its highest and its peak (the one of them farthest from zero). */
export interface Group {
  first: number
  last: number
  lowest: number
  highest: number
  peak: number
}

/** Where the `count` groups of `length` points start: as even in size as can be. */
const groupStart = (g: number, length: number, count: number) => Math.floor((g * length) / count)

/** The series in `count` groups of consecutive points. */
export function groupsOf(points: readonly Point[], count: number): Group[] {
  const groups: Group[] = []
  for (let g = 0; g < count; g++) {
    const first = groupStart(g, points.length, count)
    const last = groupStart(g + 1, points.length, count) - 1
    let lowest = first
    let highest = first
    for (let i = first + 1; i <= last; i++) {
      const y = points[i]!.y
      if (y < points[lowest]!.y) lowest = i
      if (y > points[highest]!.y) highest = i
    }
    const peak = Math.abs(points[highest]!.y) >= Math.abs(points[lowest]!.y) ? highest : lowest
    groups.push({ first, last, lowest, highest, peak })
  }
  return groups
}

/** A group's mark: filled as its peak, "<first x> – <last x>: <low> to <high> (<n> <noun>s)". */
function groupMark(points: readonly Point[], group: Group, noun: string): Mark {
  const peak = points[group.peak]!
  const count = group.last - group.first + 1
  if (count === 1) return mark(peak, peak.color)
  const first = escapeHtml(truncate(points[group.first]!.x, GROUP_LABEL_CHARS))
  const last = escapeHtml(truncate(points[group.last]!.x, GROUP_LABEL_CHARS))
  const low = points[group.lowest]!.y
  const high = points[group.highest]!.y
  const range = low === high ? formatFull(low) : `${formatFull(low)} to ${formatFull(high)}`
  return {
    attributes: ` data-x="${first}" data-y="${escapeHtml(String(peak.y))}" data-count="${count}" fill="${escapeHtml(peak.color)}"`,
    title: `<title>${first} – ${last}: ${escapeHtml(range)} (${count} ${noun}s)</title>`,
  }
}

/**
 * The marks of every point of a series (filled with each point's color), made only when drawn,
 * and the sizes the choice between them and groups needs: made once per chart, shared by both variants.
 */
export class PointMarks {
  private made: Mark[] | undefined
  private bytes: number | undefined
  private cuts: number[] | undefined

  constructor(private readonly points: readonly Point[]) {}

  get marks(): readonly Mark[] {
    this.made ??= this.points.map((point) => mark(point, point.color))
    return this.made
  }

  /** Bytes of all the marks together (counted, not made). */
  total(): number {
    this.bytes ??= this.points.reduce((sum, point) => sum + markLength(point, point.color), 0)
    return this.bytes
  }

  /** Bytes of the `i`th point's x as a group's tooltip names it. */
  cut(i: number): number {
    this.cuts ??= this.points.map((point) => escapedLength(point.x.length > GROUP_LABEL_CHARS ? truncate(point.x, GROUP_LABEL_CHARS) : point.x))
    return this.cuts[i]!
  }
}

/** How a variant draws a series: every point (`groups` null, the series' own marks) or groups with their marks. */
export interface Fitted {
  groups: Group[] | null
  marks: readonly Mark[]
}

/**
 * Every point when `room` marks and `budget` bytes hold them all (`shapeBytes` per mark for its
 * shape besides the mark's text: a bar, a circle and its stretch of path), otherwise the most
 * groups that fit both; one group at the least. The group count is estimated from the labels'
 * sizes, then the groups' marks are made and measured (and fewer made, should they not fit).
 */
export function fitMarks(points: readonly Point[], singles: PointMarks, room: number, budget: number, shapeBytes: { point: number; group: number }, noun: string): Fitted {
  if (points.length <= room && singles.total() + points.length * shapeBytes.point <= budget) return { groups: null, marks: singles.marks }
  const estimate = (count: number) => {
    let bytes = count * (GROUP_FRAME + shapeBytes.group)
    for (let g = 0; g < count; g++) bytes += 2 * singles.cut(groupStart(g, points.length, count)) + singles.cut(groupStart(g + 1, points.length, count) - 1)
    return bytes
  }
  let count = Math.max(1, Math.min(room, points.length))
  for (let bytes = estimate(count); count > 1 && bytes > budget; bytes = estimate(count)) count = Math.max(1, Math.min(count - 1, Math.floor((count * budget) / bytes)))
  for (;;) {
    const groups = groupsOf(points, count)
    const marks = groups.map((group) => groupMark(points, group, noun))
    const bytes = marks.reduce((sum, mark) => sum + markBytes(mark), 0) + count * shapeBytes.group
    if (bytes <= budget || count === 1) return { groups, marks }
    count = Math.max(1, Math.min(count - 1, Math.floor((count * budget) / bytes)))
  }
}
