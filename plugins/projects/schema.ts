/** Projects, their direct members and their linked teams (the only way teams reach a project). */
import { index, pgEnum, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { primaryId, timestamps } from '../../src/schema'
import { organizationReference, userReference, users } from '../auth/schema'
import { teams } from '../teams/schema'

/** Ordered, so `greatest()` and `max()` give the highest level. */
export const accessLevel = pgEnum('access_level', ['viewer', 'editor', 'owner'])

export const projects = pgTable(
  'projects',
  {
    id: primaryId(),
    organizationId: organizationReference(),
    name: text().notNull(),
    description: text(),
    createdBy: userReference(),
    ...timestamps,
  },
  (table) => [index('projects_organization_created_idx').on(table.organizationId, table.createdAt, table.id)],
)

export const projectMembers = pgTable(
  'project_members',
  {
    projectId: uuid()
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    userId: uuid()
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    organizationId: organizationReference(),
    accessLevel: accessLevel().notNull(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    updatedAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [
    primaryKey({ columns: [table.projectId, table.userId] }),
    index('project_members_user_idx').on(table.userId, table.projectId),
    index('project_members_list_idx').on(table.projectId, table.createdAt, table.userId),
  ],
)

export const projectTeams = pgTable(
  'project_teams',
  {
    projectId: uuid()
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    teamId: uuid()
      .notNull()
      .references(() => teams.id, { onDelete: 'cascade' }),
    organizationId: organizationReference(),
    accessLevel: accessLevel().notNull(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    updatedAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [primaryKey({ columns: [table.projectId, table.teamId] }), index('project_teams_team_idx').on(table.teamId, table.projectId)],
)

/** The project a row belongs to: deleted with it. */
export const projectReference = () =>
  uuid()
    .notNull()
    .references(() => projects.id, { onDelete: 'cascade' })
