/**
 * The answers many operations give word for word (API v1's error answers with their headers, its
 * 304) written once under `components.responses`, named by their HTTP status (`NotFound`,
 * `TooManyRequests`), and referenced: spelled out on each of ~100 operations they made up half
 * of the document.
 */
import { STATUS_CODES } from 'node:http'
import { NOT_JSON } from './conventions'

type Json = Record<string, any>

/** `NotFound` for 404; the 400 of a request with a body, which names the JSON-only rule, `BadRequestWithBody`. */
function responseName(status: string, response: Json): string {
  const reason = (STATUS_CODES[Number(status)] ?? `Status ${status}`).split(/[^A-Za-z0-9]+/).map((word) => word.charAt(0).toUpperCase() + word.slice(1)).join('')
  return String(response.description ?? '').includes(NOT_JSON) ? `${reason}WithBody` : reason
}

/**
 * Moves each error or 304 answer that two or more operations give alike to `components.responses`
 * (the most common one per name; the rest stay where they are) and returns those.
 */
export function shareResponses(paths: Json): Json {
  const groups = new Map<string, { status: string; response: Json; uses: Json[] }>()
  for (const operations of Object.values<Json>(paths))
    for (const operation of Object.values<Json>(operations))
      for (const [status, response] of Object.entries<Json>(operation.responses ?? {})) {
        if (!/^[3-5]\d\d$/.test(status) || response.$ref) continue
        const key = `${status} ${JSON.stringify(response)}`
        const group = groups.get(key) ?? { status, response, uses: [] }
        group.uses.push(operation.responses)
        groups.set(key, group)
      }
  const shared: Json = {}
  // Stable: of equally common answers, the first one met keeps the name.
  for (const { status, response, uses } of [...groups.values()].sort((a, b) => b.uses.length - a.uses.length)) {
    const name = responseName(status, response)
    if (uses.length < 2 || shared[name]) continue
    shared[name] = response
    for (const responses of uses) responses[status] = { $ref: `#/components/responses/${name}` }
  }
  return shared
}
