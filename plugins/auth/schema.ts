/** Organizations, users and API keys. */
import { sql } from 'drizzle-orm'
import { check, index, pgTable, pgView, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { primaryId, timestamps } from '../../src/schema'

export const organizations = pgTable('organizations', {
  id: primaryId(),
  name: text().notNull(),
  ...timestamps,
})

export const users = pgTable(
  'users',
  {
    id: primaryId(),
    organizationId: uuid()
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    /** Stored lower-cased; unique across organizations because sign-in is by email alone. */
    email: text().notNull(),
    username: text().notNull(),
    displayName: text().notNull(),
    avatarUrl: text(),
    role: text({ enum: ['member', 'administrator', 'superadministrator'] }).notNull().default('member'),
    status: text({ enum: ['active', 'deactivated'] }).notNull().default('active'),
    passwordHash: text().notNull(),
    ...timestamps,
  },
  (table) => [
    uniqueIndex('users_email_unique').on(table.email),
    uniqueIndex('users_organization_username_unique').on(table.organizationId, table.username),
    check('users_role_check', sql`${table.role} in ('member', 'administrator', 'superadministrator')`),
    check('users_status_check', sql`${table.status} in ('active', 'deactivated')`),
  ],
)

export const apiKeys = pgTable(
  'api_keys',
  {
    id: primaryId(),
    organizationId: uuid()
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    ownerId: uuid()
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    name: text().notNull(),
    /** The first 8 characters of the secret, for display. */
    prefix: text().notNull(),
    /** SHA-256 of the secret, hex; the secret itself is never stored. */
    secretHash: text().notNull(),
    scopes: text().array().notNull(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    lastUsedAt: timestamp({ withTimezone: true, mode: 'date' }),
    expiresAt: timestamp({ withTimezone: true, mode: 'date' }),
    revokedAt: timestamp({ withTimezone: true, mode: 'date' }),
  },
  (table) => [
    uniqueIndex('api_keys_secret_hash_unique').on(table.secretHash),
    index('api_keys_owner_idx').on(table.ownerId, table.createdAt),
  ],
)

/** Columns of a user's limited identity `{id, username, displayName, avatarUrl}`, for joins. */
export const identityColumns = {
  id: users.id,
  username: users.username,
  displayName: users.displayName,
  avatarUrl: users.avatarUrl,
}

/** The owning organization of a row (every row carries one): deleted with it. */
export const organizationReference = () =>
  uuid()
    .notNull()
    .references(() => organizations.id, { onDelete: 'cascade' })

/** A user who did something (creator, author): kept as null when the user is deleted. */
export const userReference = () => uuid().references(() => users.id, { onDelete: 'set null' })

/**
 * Signed-in sessions: `web` (the account pages' cookie) and `mobile` (a Bearer token for apps).
 * Only the SHA-256 of the token is stored.
 */
export const sessions = pgTable(
  'sessions',
  {
    id: primaryId(),
    organizationId: uuid()
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    userId: uuid()
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    tokenHash: text().notNull(),
    kind: text({ enum: ['web', 'mobile'] }).notNull(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    lastSeenAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    /** The absolute end; the idle end is `lastSeenAt` + the kind's idle time. */
    expiresAt: timestamp({ withTimezone: true, mode: 'date' }).notNull(),
    revokedAt: timestamp({ withTimezone: true, mode: 'date' }),
  },
  (table) => [uniqueIndex('sessions_token_hash_unique').on(table.tokenHash), index('sessions_user_idx').on(table.userId)],
)

// ---- read models: what other plugins' SQL may read of these tables --------------------------

/**
 * Users as other plugins may read them: identity, role and status, never email or password
 * hash. Joined by plugins that show who did something or check who may do it (teams, projects,
 * display, push).
 */
export const userDirectory = pgView('user_directory', {
  id: uuid().notNull(),
  organizationId: uuid().notNull(),
  username: text().notNull(),
  displayName: text().notNull(),
  avatarUrl: text(),
  role: text().notNull(),
  status: text().notNull(),
}).as(sql`select id, organization_id, username, display_name, avatar_url, role, status from users`)
