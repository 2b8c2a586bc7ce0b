/** Teams and their members. */
import { and, eq, sql } from 'drizzle-orm'
import { index, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import type { Executor } from '../../src/db'
import { isUuid } from '../../src/ids'
import { primaryId, timestamps } from '../../src/schema'
import { organizationReference, users } from '../auth/schema'

export const teams = pgTable(
  'teams',
  {
    id: primaryId(),
    organizationId: organizationReference(),
    name: text().notNull(),
    description: text(),
    ...timestamps,
  },
  (table) => [
    // Names are unique per organization regardless of case ("Platform" and "platform" clash).
    uniqueIndex('teams_organization_name_unique').on(table.organizationId, sql`lower(${table.name})`),
    index('teams_organization_created_idx').on(table.organizationId, table.createdAt, table.id),
  ],
)

export const teamMembers = pgTable(
  'team_members',
  {
    teamId: uuid()
      .notNull()
      .references(() => teams.id, { onDelete: 'cascade' }),
    userId: uuid()
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    organizationId: organizationReference(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [primaryKey({ columns: [table.teamId, table.userId] }), index('team_members_user_idx').on(table.userId, table.teamId)],
)

/**
 * The team `teamId` if it belongs to organization `organizationId` (optionally locked `for
 * update`); undefined otherwise, also for an id that is no UUID. Callers choose their own error.
 */
export async function organizationTeam(executor: Executor, organizationId: string, teamId: string, lock = false) {
  if (!isUuid(teamId)) return undefined
  const query = executor
    .select()
    .from(teams)
    .where(and(eq(teams.id, teamId), eq(teams.organizationId, organizationId)))
  const [team] = lock ? await query.for('update') : await query
  return team
}
