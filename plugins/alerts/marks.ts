/**
 * Firing alerts on the live page: a mark on each component with a firing rule (`⚠ above 90`,
 * since when on hover), read by display when it draws the page and after a transition, a change
 * or a deletion of a firing rule says the page's marks changed (display's LivePageExtensions).
 */
import { queryText, type Database } from '../../src/db'
import { isoFromText } from '../../src/sql'
import type { ComponentMark } from '../display/api'
import { duration } from './evaluate'

/** Marks one page shows at most (a page's components × their rules is bounded by config; this bounds the read whatever it says). */
const MARKS_LIMIT = 1000

/** $1 organization, $2 page: its firing rules, the time each last fired (one shard on Citus: every table is the organization's). */
const FIRING = `select a.component_id as "componentId", a.kind as "when", a.value::float8 as value, a.for_seconds as "forSeconds",
    (select max(h.at) from alert_transitions h where h.organization_id = a.organization_id and h.alert_id = a.id and h.transition = 'fired') as since
  from component_alerts a where a.organization_id = $1 and a.page_id = $2 and a.state = 'firing'
  order by a.created_at, a.id limit ${MARKS_LIMIT}`

interface Firing {
  componentId: string
  when: 'above' | 'below' | 'noData'
  value: number | null
  forSeconds: number
  since: string | null
}

/** A firing rule's mark: `⚠ above 90`, `⚠ below 10`, `⚠ no data for 10 min`; "Firing since 2026-11-28 07:01 UTC" on hover. */
export function markOf(rule: Firing): ComponentMark {
  const text = rule.when === 'noData' ? `⚠ no data for ${duration(rule.forSeconds)}` : `⚠ ${rule.when} ${rule.value}`
  const since = rule.since === null ? null : isoFromText(rule.since)
  return { componentId: rule.componentId, tone: 'alert', text, detail: since ? `Firing since ${since.slice(0, 16).replace('T', ' ')} UTC` : 'Firing' }
}

export async function firingMarks(db: Database, organizationId: string, pageId: string): Promise<ComponentMark[]> {
  return (await queryText<Firing>(db, FIRING, [organizationId, pageId])).map(markOf)
}
