/** Organizations, users, the global email lookup, API keys, sessions, and OAuth clients, grants, codes and tokens. */
import { sql } from 'drizzle-orm'
import { boolean, check, index, pgTable, pgView, text, timestamp, uniqueIndex, uuid, type PgColumn } from 'drizzle-orm/pg-core'
import { primaryId, rowId, tenantKey, tenantReference, timestamps } from '../../src/schema'

export const organizations = pgTable('organizations', {
  id: primaryId(),
  name: text().notNull(),
  /** false: its users sign in through an identity provider only (the account area refuses passwords). */
  passwordSignIn: boolean().notNull().default(true),
  ...timestamps,
})

/** The owning organization of a row (every tenant row carries one): deleted with it. */
export const organizationReference = () =>
  uuid()
    .notNull()
    .references(() => organizations.id, { onDelete: 'cascade' })

export const users = pgTable(
  'users',
  {
    id: rowId(),
    organizationId: organizationReference(),
    /** Stored lower-cased; unique across organizations (sign-in is by email alone) through `user_emails`. */
    email: text().notNull(),
    username: text().notNull(),
    displayName: text().notNull(),
    avatarUrl: text(),
    role: text({ enum: ['member', 'administrator', 'superadministrator'] }).notNull().default('member'),
    /** `invited`: made by an administrator, not yet accepted (user_invitations); cannot sign in. */
    status: text({ enum: ['active', 'deactivated', 'invited'] }).notNull().default('active'),
    /** scrypt; an invited user's is a value no password matches until they accept. */
    passwordHash: text().notNull(),
    ...timestamps,
  },
  (table) => [
    tenantKey('users', [table.id], table.organizationId),
    uniqueIndex('users_email_unique').on(table.email, table.organizationId),
    uniqueIndex('users_organization_username_unique').on(table.organizationId, table.username),
    check('users_role_check', sql`${table.role} in ('member', 'administrator', 'superadministrator')`),
    check('users_status_check', sql`${table.status} in ('active', 'deactivated', 'invited')`),
    // People lists (GET /api/v1/users): by status, then username, each page a range of this index.
    index('users_organization_status_username_idx').on(table.organizationId, table.status, table.username, table.id),
  ],
)

/**
 * Every email in use, with its user: the one global uniqueness a user has (sign-in is by email
 * alone), held in a reference table so the users table can be distributed by organization.
 */
export const userEmails = pgTable('user_emails', {
  email: text().primaryKey(),
  organizationId: organizationReference(),
  userId: uuid().notNull(),
})

/** A user of the row's organization (owner, member): `(column, organization_id)` → users, the row going with the user. */
export const userOfRow = (name: string, column: PgColumn, organizationId: PgColumn) => tenantReference(name, [column, organizationId], [users.id, users.organizationId])

/**
 * A user who did something (creator, author, assignee, sender), kept: users are deactivated,
 * never deleted, so the row goes on naming them.
 */
export const doneBy = (name: string, column: PgColumn, organizationId: PgColumn) =>
  tenantReference(name, [column, organizationId], [users.id, users.organizationId], 'no action')

export const apiKeys = pgTable(
  'api_keys',
  {
    id: rowId(),
    organizationId: organizationReference(),
    ownerId: uuid().notNull(),
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
    tenantKey('api_keys', [table.id], table.organizationId),
    userOfRow('api_keys_owner_fk', table.ownerId, table.organizationId),
    // 256 random bits: unique with or without the organization; looked up by the hash alone.
    uniqueIndex('api_keys_secret_hash_unique').on(table.secretHash, table.organizationId),
    index('api_keys_owner_idx').on(table.ownerId, table.createdAt),
  ],
)

/**
 * One-time invitation links (`/account/invite/<token>`): only the SHA-256 of the token is stored.
 * A user has at most one live invitation; issuing a new one voids the old (deletes it).
 */
export const userInvitations = pgTable(
  'user_invitations',
  {
    id: rowId(),
    organizationId: organizationReference(),
    userId: uuid().notNull(),
    tokenHash: text().notNull(),
    createdBy: uuid(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    expiresAt: timestamp({ withTimezone: true, mode: 'date' }).notNull(),
  },
  (table) => [
    tenantKey('user_invitations', [table.id], table.organizationId),
    userOfRow('user_invitations_user_fk', table.userId, table.organizationId),
    uniqueIndex('user_invitations_token_hash_unique').on(table.tokenHash, table.organizationId),
    uniqueIndex('user_invitations_user_unique').on(table.userId, table.organizationId),
  ],
)

/** Columns of a user's limited identity `{id, username, displayName, avatarUrl}`, for joins. */
export const identityColumns = {
  id: users.id,
  username: users.username,
  displayName: users.displayName,
  avatarUrl: users.avatarUrl,
}


/**
 * Signed-in sessions: `web` (the account pages' cookie) and `mobile` (a Bearer token for apps).
 * Only the SHA-256 of the token is stored.
 */
export const sessions = pgTable(
  'sessions',
  {
    id: rowId(),
    organizationId: organizationReference(),
    userId: uuid().notNull(),
    tokenHash: text().notNull(),
    kind: text({ enum: ['web', 'mobile'] }).notNull(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    lastSeenAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    /** The absolute end; the idle end is `lastSeenAt` + the kind's idle time. */
    expiresAt: timestamp({ withTimezone: true, mode: 'date' }).notNull(),
    revokedAt: timestamp({ withTimezone: true, mode: 'date' }),
  },
  (table) => [
    tenantKey('sessions', [table.id], table.organizationId),
    userOfRow('sessions_user_fk', table.userId, table.organizationId),
    uniqueIndex('sessions_token_hash_unique').on(table.tokenHash, table.organizationId),
    index('sessions_user_idx').on(table.userId),
  ],
)

// ---- OAuth: clients (registered, or described by a metadata document), grants, codes, tokens ----
// Codes and tokens are stored only as SHA-256 hashes and name their organization (routed secrets,
// src/secrets.ts), so each is found on its organization's shard.

export const oauthClients = pgTable(
  'oauth_clients',
  {
    /** A registered client's random id, or the https URL of a client ID metadata document. */
    id: text().primaryKey(),
    kind: text({ enum: ['registered', 'document'] }).notNull(),
    name: text().notNull(),
    redirectUris: text().array().notNull(),
    /** A registration's client address, hashed (its per-address bound); null for a document. */
    registeredBy: text(),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    /** When a document was last read from its URL. */
    fetchedAt: timestamp({ withTimezone: true, mode: 'date' }),
    /** When a user last approved it: a client never approved for 30 days goes first when registrations are full. */
    lastApprovedAt: timestamp({ withTimezone: true, mode: 'date' }),
  },
  (table) => [index('oauth_clients_registered_by_idx').on(table.registeredBy, table.createdAt), index('oauth_clients_created_idx').on(table.createdAt)],
)

export const oauthGrants = pgTable(
  'oauth_grants',
  {
    id: rowId(),
    organizationId: organizationReference(),
    userId: uuid().notNull(),
    clientId: text().notNull(),
    /** The client's name when the user approved it (what "Connected apps" shows). */
    clientName: text().notNull(),
    redirectUri: text().notNull(),
    scopes: text().array().notNull(),
    /** The resource its tokens are for: `mcp`, `api`, or null for both. */
    audience: text({ enum: ['mcp', 'api'] }),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    lastUsedAt: timestamp({ withTimezone: true, mode: 'date' }),
    revokedAt: timestamp({ withTimezone: true, mode: 'date' }),
    /** Why: `user`, `client` (RFC 7009), `code_reused`, `refresh_token_reused`. */
    revokedReason: text(),
  },
  (table) => [
    tenantKey('oauth_grants', [table.id], table.organizationId),
    userOfRow('oauth_grants_user_fk', table.userId, table.organizationId),
    index('oauth_grants_user_idx').on(table.userId, table.createdAt),
  ],
)

const grantOfRow = (name: string, grantId: PgColumn, organizationId: PgColumn) =>
  tenantReference(name, [grantId, organizationId], [oauthGrants.id, oauthGrants.organizationId])

export const oauthCodes = pgTable(
  'oauth_codes',
  {
    codeHash: text().notNull(),
    organizationId: organizationReference(),
    grantId: uuid().notNull(),
    /** PKCE: base64url(SHA-256(code_verifier)). */
    codeChallenge: text().notNull(),
    redirectUri: text().notNull(),
    expiresAt: timestamp({ withTimezone: true, mode: 'date' }).notNull(),
    usedAt: timestamp({ withTimezone: true, mode: 'date' }),
  },
  (table) => [tenantKey('oauth_codes', [table.codeHash], table.organizationId), grantOfRow('oauth_codes_grant_fk', table.grantId, table.organizationId), index('oauth_codes_expires_idx').on(table.expiresAt)],
)

export const oauthTokens = pgTable(
  'oauth_tokens',
  {
    tokenHash: text().notNull(),
    organizationId: organizationReference(),
    grantId: uuid().notNull(),
    kind: text({ enum: ['access', 'refresh'] }).notNull(),
    expiresAt: timestamp({ withTimezone: true, mode: 'date' }).notNull(),
    /** A refresh token's use: it was exchanged (rotated); presented again, its grant is revoked. */
    usedAt: timestamp({ withTimezone: true, mode: 'date' }),
    createdAt: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (table) => [
    tenantKey('oauth_tokens', [table.tokenHash], table.organizationId),
    grantOfRow('oauth_tokens_grant_fk', table.grantId, table.organizationId),
    index('oauth_tokens_grant_idx').on(table.grantId),
    index('oauth_tokens_expires_idx').on(table.expiresAt),
    check('oauth_tokens_used_check', sql`${table.usedAt} is null or ${table.kind} = 'refresh'`),
  ],
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
