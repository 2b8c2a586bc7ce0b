/** Projects, their direct members and their linked teams (the only way teams reach a project). */
import { index, pgEnum, pgTable, text, timestamp, uuid, type PgColumn } from 'drizzle-orm/pg-core'
import { rowId, tenantKey, tenantReference, timestamps } from '../../src/schema'
import { doneBy, organizationReference, userOfRow } from '../auth/schema'
import { teams } from '../teams/schema'

/** Ordered, so `greatest()` and `max()` give the highest level. */
export const accessLevel = pgEnum('access_level', ['viewer', 'editor', 'owner'])

export const projects = pgTable(
  'projects',
  {
    id: rowId(),
    organizationId: organizationReference(),
    name: text().notNull(),
    description: text(),
    createdBy: uuid(),
    ...timestamps,
  },
  (table) => [
    tenantKey('projects', [table.id], table.organizationId),
    doneBy('projects_created_by_fk', table.createdBy, table.organizationId),
    index('projects_organization_created_idx').on(table.organizationId, table.createdAt, table.id),
  ],
)

export const projectMembers = pgTable(
  'project_members',
  {
    projectId: uuid().notNull(),
    userId: uuid().notNull(),
    organizationId: organizationReference(),
    accessLevel: accessLevel().notNull(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    updatedAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [
    tenantKey('project_members', [table.projectId, table.userId], table.organizationId),
    projectOfRow('project_members_project_fk', table.projectId, table.organizationId),
    userOfRow('project_members_user_fk', table.userId, table.organizationId),
    index('project_members_user_idx').on(table.userId, table.projectId),
    index('project_members_list_idx').on(table.projectId, table.createdAt, table.userId),
  ],
)

export const projectTeams = pgTable(
  'project_teams',
  {
    projectId: uuid().notNull(),
    teamId: uuid().notNull(),
    organizationId: organizationReference(),
    accessLevel: accessLevel().notNull(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    updatedAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [
    tenantKey('project_teams', [table.projectId, table.teamId], table.organizationId),
    projectOfRow('project_teams_project_fk', table.projectId, table.organizationId),
    tenantReference('project_teams_team_fk', [table.teamId, table.organizationId], [teams.id, teams.organizationId]),
    index('project_teams_team_idx').on(table.teamId, table.projectId),
  ],
)

/** The project a row belongs to, of the row's organization: `(column, organization_id)` → projects, the row deleted with it. */
export const projectOfRow = (name: string, column: PgColumn, organizationId: PgColumn) =>
  tenantReference(name, [column, organizationId], [projects.id, projects.organizationId])
