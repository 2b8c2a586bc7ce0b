/** TypeBox value errors → the envelope's error items, the same for routes, the CLI and MCP. */
import type { ErrorItem } from './errors'

export interface ValueErrorLike {
  path: string
  message: string
}

/** `/data/points/3/y` → `data.points[3].y`. */
export function pointerToField(pointer: string): string {
  let field = ''
  for (const raw of pointer.split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    if (/^\d+$/.test(part)) field += `[${part}]`
    else field += field === '' ? part : `.${part}`
  }
  return field
}

/** Validation reports at most this many fields: the rest would only cost time and bytes. */
export const MAX_ERROR_ITEMS = 20

/**
 * One item per offending field, at most MAX_ERROR_ITEMS, reading `errors` lazily so a value with
 * 400,000 bad items costs 20 error objects, not 400,000. `where` names what a field is ("field",
 * "query parameter"); `whole` names the value itself ("request body") for an error at its root,
 * which alone is reported since it makes every field error noise (validators report the root first).
 */
export function itemsFromValueErrors(errors: Iterable<ValueErrorLike>, where: string, whole: string): ErrorItem[] {
  const seen = new Set<string>()
  const items: ErrorItem[] = []
  for (const error of errors) {
    const field = pointerToField(error.path ?? '')
    if (field === '') return [{ code: 'BAD_REQUEST', message: `The ${whole} is invalid: ${error.message}.` }]
    if (seen.has(field)) continue
    seen.add(field)
    const message = error.message === 'Unexpected property' ? `Unknown ${where} "${field}".` : `Invalid ${where} "${field}": ${error.message}.`
    items.push({ code: 'BAD_REQUEST', message, field })
    if (items.length === MAX_ERROR_ITEMS) break
  }
  return items.length ? items : [{ code: 'BAD_REQUEST', message: `The ${whole} is invalid.` }]
}
