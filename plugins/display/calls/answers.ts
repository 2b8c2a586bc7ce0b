/**
 * The refusals of display's charged calls (`POST /api/component`, and push's `POST /api/message`
 * through DisplayCalls) and the usage a call's counter row gives. The display API's convention
 * itself (answers, usage headers, body checks, OpenAPI wording) is the core's kit,
 * src/http/display-api.
 */
import type { Refusal, Usage } from '../../../src/http/display-api'

export interface UsageRow {
  userId: string
  dailyLimit: number
  calls: number | null
  callsBefore: number | null
  type?: string | null
  /** The key's user may feed the page (creator, administrator, or an editor entry). */
  editable?: boolean | null
  /** The component is fed by a plugin (a work source): display calls to it are 409 componentBound. */
  bound?: boolean | null
  updatedId?: string | null
  pageId?: string | null
}

export const unknownKey = (): Refusal => ({ ok: false, status: 401, error: { message: 'invalidApiKey', detail: 'The apiKey is not a valid display key.' } })

export function usageOf(row: UsageRow): Usage {
  if (row.calls === null) return { limit: row.dailyLimit, used: Math.max(row.dailyLimit, row.callsBefore ?? 0), charged: false }
  return { limit: row.dailyLimit, used: row.calls, charged: true }
}

/** 403: the key's user sees the page but is only a viewer of it (charged). */
export const readOnly = (usage: Usage): Refusal => ({
  ok: false,
  status: 403,
  usage,
  error: { message: 'readOnlyAccess', detail: 'You are a viewer of this page; only its editors, its creator and administrators may feed it.' },
})

export const limitExceeded = (usage: Usage): Refusal => ({
  ok: false,
  status: 429,
  usage,
  error: { message: 'limitExceeded', detail: `The daily limit of ${usage.limit} calls is used up; it resets at the next UTC midnight.` },
})
