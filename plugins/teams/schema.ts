/** Teams and their members. */
import { sql } from 'drizzle-orm'
import { index, pgTable, pgView, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { rowId, tenantKey, tenantReference, timestamps } from '../../src/schema'
import { organizationReference, userOfRow } from '../auth/schema'

export const teams = pgTable(
  'teams',
  {
    id: rowId(),
    organizationId: organizationReference(),
    name: text().notNull(),
    description: text(),
    ...timestamps,
  },
  (table) => [
    tenantKey('teams', [table.id], table.organizationId),
    // Names are unique per organization regardless of case ("Platform" and "platform" clash).
    uniqueIndex('teams_organization_name_unique').on(table.organizationId, sql`lower(${table.name})`),
    index('teams_organization_created_idx').on(table.organizationId, table.createdAt, table.id),
  ],
)

export const teamMembers = pgTable(
  'team_members',
  {
    teamId: uuid().notNull(),
    userId: uuid().notNull(),
    organizationId: organizationReference(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [
    tenantKey('team_members', [table.teamId, table.userId], table.organizationId),
    tenantReference('team_members_team_fk', [table.teamId, table.organizationId], [teams.id, teams.organizationId]),
    userOfRow('team_members_user_fk', table.userId, table.organizationId),
    index('team_members_user_idx').on(table.userId, table.teamId),
  ],
)

// ---- read models: what other plugins' SQL may read of these tables --------------------------

/** Team names, for plugins that show a team they link to (display access lists). */
export const teamDirectory = pgView('team_directory', {
  id: uuid().notNull(),
  organizationId: uuid().notNull(),
  name: text().notNull(),
}).as(sql`select id, organization_id, name from teams`)

/** Who is in which team, for plugins that grant access to teams (projects, display). */
export const teamMemberships = pgView('team_memberships', {
  teamId: uuid().notNull(),
  userId: uuid().notNull(),
  organizationId: uuid().notNull(),
}).as(sql`select team_id, user_id, organization_id from team_members`)
