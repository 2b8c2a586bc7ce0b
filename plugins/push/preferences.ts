/**
 * A user's push preferences, `GET/PUT /api/v1/users/me/notifications`: quiet hours in their time
 * zone (a non-critical push waits until they end, quiet-hours.ts) and muted pages (nothing is
 * sent to them from those). Kept in `notification_preferences`, one row per user, read by the
 * outbox's claim and by the statement that records a message's deliveries.
 */
import type { TObject } from '@sinclair/typebox'
import { t } from 'elysia'
import { queryText, type Executor } from '../../src/db'
import { badRequest, requireReferences } from '../../src/http/errors'
import { isAdministrator, type Actor } from '../../src/services/identity'
import type { Writes } from '../../src/writes'
import type { PreferenceSection } from './api'
import { clockMinutes, isTimeZone, type QuietHours } from './quiet-hours'

/** The most pages one user mutes. */
export const MAX_MUTED_PAGES = 500

const Clock = (description: string) => t.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$', description: `HH:MM on the local clock, 00:00 … 23:59: ${description}.` })

export const QuietHoursModel = t.Object(
  {
    start: Clock('when they begin'),
    end: Clock('when they end (earlier than start: the next day)'),
    timeZone: t.String({ minLength: 1, maxLength: 64, description: 'An IANA time zone, e.g. `Europe/Berlin`: the clock start and end are read on, DST included.' }),
  },
  { additionalProperties: false, title: 'QuietHours' },
)

export const NotificationPreferences = t.Object(
  {
    quietHours: t.Union([QuietHoursModel, t.Null()], {
      description: 'While they last, a push that is not `critical` waits (`held`) until they end, or is dropped (`expired`) when its ttlSeconds runs out first. null: none.',
    }),
    mutedPageIds: t.Array(t.String({ format: 'uuid' }), {
      maxItems: MAX_MUTED_PAGES,
      description: `Pages whose messages are not sent to you (also those already scheduled, until they go out); at most ${MAX_MUTED_PAGES}, kept in the order given, each once. Each a page you can see; another is 400 naming it.`,
    }),
  },
  { additionalProperties: false, title: 'NotificationPreferences' },
)

export interface Preferences {
  quietHours: QuietHours | null
  mutedPageIds: string[]
  /** Other plugins' sections (PreferenceSectionsRef), by key. */
  [section: string]: unknown
}

/**
 * The preferences as GET answers them (`input` false: every section in full) or as PUT takes them
 * (`input` true: each section, and each of its fields, optional: what is left out stays).
 */
export function preferencesModel(sections: readonly PreferenceSection[], input: boolean): TObject {
  if (!sections.length) return NotificationPreferences
  const added = Object.fromEntries(sections.map((section) => [section.key, input ? t.Optional(t.Partial(section.schema, { additionalProperties: false })) : section.schema]))
  return t.Object({ ...NotificationPreferences.properties, ...added }, { additionalProperties: false, title: input ? 'NotificationPreferencesInput' : 'NotificationPreferences' })
}

interface Row {
  quietStart: string | null
  quietEnd: string | null
  timeZone: string | null
  mutedPageIds: string[]
}

const NONE: Preferences = { quietHours: null, mutedPageIds: [] }

/**
 * The caller's preferences. Muted pages they can no longer see (deleted, or their access lost) are
 * left out, so what a GET answers a PUT accepts again; the stored list keeps them until the next
 * PUT (a page gone sends nothing anyway).
 */
async function readOwn(executor: Executor, actor: Actor): Promise<Preferences> {
  const [row] = await queryText<Row>(
    executor,
    `select n.quiet_start as "quietStart", n.quiet_end as "quietEnd", n.time_zone as "timeZone",
        array(select m.page_id from unnest(n.muted_page_ids) with ordinality as m(page_id, place)
          where exists (select 1 from page_viewers v where v.organization_id = $2 and v.page_id = m.page_id and ($3::boolean or v.user_id = $1))
          order by m.place)::text[] as "mutedPageIds"
      from notification_preferences n where n.user_id = $1 and n.organization_id = $2`,
    [actor.userId, actor.organizationId, isAdministrator(actor)],
  )
  if (!row) return NONE
  const quietHours = row.quietStart && row.quietEnd && row.timeZone ? { start: row.quietStart, end: row.quietEnd, timeZone: row.timeZone } : null
  return { quietHours, mutedPageIds: row.mutedPageIds }
}

/**
 * Refuses muted page ids the caller cannot see (unknown, another organization's, or not theirs),
 * naming each at its place in the body. The read model has a row for each page's creator, so an
 * administrator, who sees every page of the organization, finds each of its pages there.
 */
async function requireVisiblePages(executor: Executor, actor: Actor, mutedPageIds: readonly string[]) {
  if (!mutedPageIds.length) return
  const visible = await queryText<{ pageId: string }>(
    executor,
    `select distinct v.page_id as "pageId" from page_viewers v
      where v.organization_id = $1 and v.page_id = any($2::uuid[]) and ($3::boolean or v.user_id = $4)`,
    [actor.organizationId, mutedPageIds, isAdministrator(actor), actor.userId],
  )
  requireReferences(mutedPageIds, new Set(visible.map((row) => row.pageId)), (index) => `mutedPageIds[${index}]`, 'No page with this id that you can see.')
}

/** What the schema cannot say: a start other than the end, a zone this runtime knows. */
function check(input: Preferences): Preferences {
  const quiet = input.quietHours
  if (quiet) {
    if (clockMinutes(quiet.start) === clockMinutes(quiet.end)) throw badRequest('quietHours.end must differ from quietHours.start (quiet hours of no length, or of a whole day, are not kept).', 'quietHours.end')
    if (!isTimeZone(quiet.timeZone)) throw badRequest('quietHours.timeZone must be an IANA time zone, such as Europe/Berlin or America/New_York.', 'quietHours.timeZone')
  }
  const mutedPageIds = [...new Set(input.mutedPageIds.map((id) => id.toLowerCase()))]
  return { quietHours: quiet ? { start: quiet.start, end: quiet.end, timeZone: quiet.timeZone } : null, mutedPageIds }
}

export function createPreferences(writes: Writes, sections: readonly PreferenceSection[]) {
  /** This plugin's preferences and every section's. */
  const read = async (executor: Executor, actor: Actor): Promise<Preferences> => {
    const [own, ...added] = await Promise.all([readOwn(executor, actor), ...sections.map((section) => section.read(executor, actor))])
    sections.forEach((section, i) => (own[section.key] = added[i]))
    return own
  }
  return {
    get: (actor: Actor) => read(writes.db, actor),

    /** Replaces the caller's preferences (of each section, what the body holds), with its audit record, in one transaction. */
    put(actor: Actor, input: Preferences): Promise<Preferences> {
      const next = check(input)
      return writes.change(actor, null, async ({ tx, audit }) => {
        await requireVisiblePages(tx, actor, input.mutedPageIds)
        const before = await read(tx, actor)
        const quiet = next.quietHours
        await queryText(
          tx,
          `insert into notification_preferences (user_id, organization_id, quiet_start, quiet_end, time_zone, muted_page_ids, updated_at)
            values ($1, $2, $3, $4, $5, $6::uuid[], $7::timestamptz)
            on conflict (user_id, organization_id) do update set quiet_start = excluded.quiet_start, quiet_end = excluded.quiet_end,
              time_zone = excluded.time_zone, muted_page_ids = excluded.muted_page_ids, updated_at = excluded.updated_at`,
          [actor.userId, actor.organizationId, quiet?.start ?? null, quiet?.end ?? null, quiet?.timeZone ?? null, next.mutedPageIds, new Date().toISOString()],
        )
        for (const section of sections) if (input[section.key] !== undefined) await section.write(tx, actor, input[section.key] as never)
        const after = await read(tx, actor)
        await audit({ action: 'notification_preferences.updated', resourceType: 'user', resourceId: actor.userId!, changes: { before: { ...before }, after: { ...after } } })
        return after
      })
    },
  }
}

export type PreferenceService = ReturnType<typeof createPreferences>
