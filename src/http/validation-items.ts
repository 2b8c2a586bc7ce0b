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

/**
 * One item per offending field (at most 20). `where` names what a field is ("field", "query
 * parameter"); `whole` names the value itself ("request body") for an error at its root, which
 * alone is reported since it makes every field error noise.
 */
export function itemsFromValueErrors(errors: Iterable<ValueErrorLike>, where: string, whole: string): ErrorItem[] {
  const all = [...errors]
  const root = all.find((error) => (error.path ?? '') === '')
  const seen = new Set<string>()
  const items: ErrorItem[] = []
  for (const error of root ? [root] : all) {
    const field = pointerToField(error.path ?? '')
    if (seen.has(field)) continue
    seen.add(field)
    if (field === '') {
      items.push({ code: 'BAD_REQUEST', message: `The ${whole} is invalid: ${error.message}.` })
      continue
    }
    const message = error.message === 'Unexpected property' ? `Unknown ${where} "${field}".` : `Invalid ${where} "${field}": ${error.message}.`
    items.push({ code: 'BAD_REQUEST', message, field })
    if (items.length === 20) break
  }
  return items.length ? items : [{ code: 'BAD_REQUEST', message: `The ${whole} is invalid.` }]
}
