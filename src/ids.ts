/** Identifiers: UUID version 7 (time-ordered, so new rows append to indexes) and UUID checks. */
import { randomFillSync } from 'node:crypto'

const bytes = new Uint8Array(16)

/** A new UUIDv7 (RFC 9562): 48-bit millisecond timestamp, then random bits. */
export function uuidv7(): string {
  randomFillSync(bytes)
  const now = Date.now()
  bytes[0] = Math.floor(now / 2 ** 40) & 0xff
  bytes[1] = Math.floor(now / 2 ** 32) & 0xff
  bytes[2] = (now >>> 24) & 0xff
  bytes[3] = (now >>> 16) & 0xff
  bytes[4] = (now >>> 8) & 0xff
  bytes[5] = now & 0xff
  bytes[6] = 0x70 | (bytes[6]! & 0x0f)
  bytes[8] = 0x80 | (bytes[8]! & 0x3f)
  let hex = ''
  for (const byte of bytes) hex += byte.toString(16).padStart(2, '0')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/** A UUID written out, either case: the source of `isUuid` and of the request models' pattern. */
export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
const UUID = new RegExp(UUID_PATTERN)

/** True for a syntactically valid UUID; anything else in a path is simply "not found". */
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID.test(value)
