/** Projects, their direct members and their linked teams (the only way teams reach a project). */
import { sql } from 'drizzle-orm'
import { check, index, pgEnum, pgTable, pgView, text, timestamp, uniqueIndex, uuid, type PgColumn } from 'drizzle-orm/pg-core'
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
    /** What people say (`ENG`): 2–10 of A–Z and 0–9, starting with a letter; work items are `ENG-123`. Every key it had stays in project_keys. */
    key: text()
      .notNull()
      // The service always derives one (service.ts); rows written by hand (seeding) get a random one.
      .default(sql`'P' || upper(substr(md5(random()::text), 1, 8))`),
    description: text(),
    createdBy: uuid(),
    ...timestamps,
  },
  (table) => [
    tenantKey('projects', [table.id], table.organizationId),
    uniqueIndex('projects_organization_key_unique').on(table.organizationId, table.key),
    check('projects_key_check', sql`${table.key} ~ '^[A-Z][A-Z0-9]{1,9}$'`),
    doneBy('projects_created_by_fk', table.createdBy, table.organizationId),
    index('projects_organization_created_idx').on(table.organizationId, table.createdAt, table.id),
  ],
)

/**
 * Every key a project has had (its current one included): an old key keeps resolving to its
 * project, and is never given to another project of the organization.
 */
export const projectKeys = pgTable(
  'project_keys',
  {
    key: text().notNull(),
    organizationId: organizationReference(),
    projectId: uuid().notNull(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [tenantKey('project_keys', [table.key], table.organizationId), projectOfRow('project_keys_project_fk', table.projectId, table.organizationId)],
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

// ---- read models: what other plugins' SQL may read of these tables --------------------------

/** Projects' keys as other plugins read them to resolve `ENG-123`: every key a project has had, old ones included. */
export const projectKeyDirectory = pgView('project_key_directory', {
  key: text().notNull(),
  organizationId: uuid().notNull(),
  projectId: uuid().notNull(),
}).as(sql`select key, organization_id, project_id from project_keys`)

/** Projects as other plugins read them: id, name and current key (work items show `<key>-<number>`). */
export const projectDirectory = pgView('project_directory', {
  id: uuid().notNull(),
  organizationId: uuid().notNull(),
  key: text().notNull(),
  name: text().notNull(),
}).as(sql`select id, organization_id, key, name from projects`)
