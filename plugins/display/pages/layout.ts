/**
 * The dashboard grid: 24 columns, rows of at least ROW_PX pixels that grow with their content. A
 * component covers columns x..x+width-1 and rows y..y+height-1. New components fill rows: each
 * type has a default size, and a component without a position takes the first free place,
 * row by row, left to right.
 */
import type { COMPONENT_TYPES } from '../schema'

export const GRID_COLUMNS = 24
/** The least height of a grid row on the live page, in CSS pixels. */
export const ROW_PX = 40

type ComponentType = (typeof COMPONENT_TYPES)[number]

/** A new component's size when the request gives none: two charts or wide boxes a row, four tall boxes. */
export const DEFAULT_SIZE: Record<ComponentType, { width: number; height: number }> = {
  horizontalBox: { width: 12, height: 3 },
  verticalBox: { width: 6, height: 5 },
  barChart: { width: 12, height: 6 },
  lineChart: { width: 12, height: 6 },
  pieChart: { width: 12, height: 6 },
}

export interface Placement {
  x: number
  y: number
  width: number
  height: number
}

/** Columns a component really spans: never past the grid's right edge. */
export const spanOf = (placement: { x: number; width: number }) => Math.max(1, Math.min(placement.width, GRID_COLUMNS - Math.min(placement.x, GRID_COLUMNS - 1)))

/** The least height a component placed without a given height may shrink to, to fill a gap in an earlier row: half its default. */
export const minimumHeight = (type: ComponentType) => Math.ceil(DEFAULT_SIZE[type].height / 2)

/**
 * Where a new component goes among `existing`: the position it asks for, or else the first place
 * (row by row, then column) where its size overlaps nothing. A given `x` or `y` alone is kept and
 * the other found. Without a given height, a component may take a shorter gap (down to half its
 * default height, such as the three rows beside a wide box) that comes before the first place of
 * its full size: it fills that half row instead of leaving it empty and starting a new one.
 */
export function place(existing: readonly Placement[], wanted: { type: ComponentType; x?: number; y?: number; width?: number; height?: number }): Placement {
  const width = Math.min(wanted.width ?? DEFAULT_SIZE[wanted.type].width, GRID_COLUMNS)
  const height = wanted.height ?? DEFAULT_SIZE[wanted.type].height
  if (wanted.x !== undefined && wanted.y !== undefined) return { x: wanted.x, y: wanted.y, width, height }
  const span = Math.min(width, GRID_COLUMNS - (wanted.x ?? 0))
  const least = wanted.height === undefined ? Math.min(height, minimumHeight(wanted.type)) : height
  const across = (x: number, other: Placement) => !(x + span <= other.x || other.x + spanOf(other) <= x)
  // The rows free at (x, y), up to `height`: the gap down to the first component below in these columns.
  const room = (x: number, y: number) =>
    existing.reduce((rows, other) => (across(x, other) ? (other.y + other.height <= y ? rows : Math.min(rows, Math.max(0, other.y - y))) : rows), height)
  // The first free place is at row 0 or right below some component, and at column 0 or right of one.
  const rows = wanted.y !== undefined ? [wanted.y] : [...new Set([0, ...existing.map((other) => other.y + other.height)])].sort((a, b) => a - b)
  const columns = wanted.x !== undefined ? [wanted.x] : [...new Set([0, ...existing.map((other) => other.x + spanOf(other))])].sort((a, b) => a - b)
  for (const y of rows)
    for (const x of columns) {
      if (x + span > GRID_COLUMNS) continue
      const free = room(x, y)
      if (free >= least) return { x, y, width, height: free }
    }
  // Only a given `y` with no room on its row gets here (below every component there is room): it goes there, overlapping.
  return { x: wanted.x ?? 0, y: wanted.y!, width, height }
}
