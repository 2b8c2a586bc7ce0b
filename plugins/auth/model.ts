/**
 * Input models of organizations, users and API keys (CLI and account area alike), and the hook a
 * new user's creation runs (api.ts shows it to other plugins; it is here because the creation in
 * service.ts needs it and api.ts re-exports service.ts's accountsFor).
 */
import { t } from 'elysia'
import type { Transaction } from '../../src/db'
import { Timestamp, UuidString } from '../../src/http/models'

export const EMAIL_MAX = 254
export const KEY_NAME_MAX = 100
export const PASSWORD_MAX = 1024
/** A people list's `q` is at most this long (a prefix of a name or an address). */
export const PEOPLE_Q_MAX = 100

export const OrganizationInput = t.Object({ name: t.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false })
export const OrganizationPatch = t.Object({ name: t.Optional(t.String({ minLength: 1, maxLength: 200 })), passwordSignIn: t.Optional(t.Boolean()) }, { additionalProperties: false })

const roleSchema = (options: { description?: string } = {}) => t.Union([t.Literal('member'), t.Literal('administrator'), t.Literal('superadministrator')], options)
const statusSchema = (options: { description?: string } = {}) => t.Union([t.Literal('active'), t.Literal('deactivated'), t.Literal('invited')], options)

export const USERNAME_MAX = 64
export const USERNAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]*$'
export const DISPLAY_NAME_MAX = 200
const Username = (description?: string) => t.String({ minLength: 1, maxLength: USERNAME_MAX, pattern: USERNAME_PATTERN, ...(description ? { description } : {}) })

export const UserInput = t.Object(
  {
    organizationId: UuidString(),
    email: t.String({ format: 'email', maxLength: EMAIL_MAX }),
    username: Username(),
    displayName: t.String({ minLength: 1, maxLength: DISPLAY_NAME_MAX }),
    role: roleSchema(),
    password: t.String({ minLength: 8, maxLength: PASSWORD_MAX }),
    avatarUrl: t.Optional(t.Union([t.String({ format: 'uri', maxLength: 2048 }), t.Null()])),
  },
  { additionalProperties: false },
)
export type UserInput = typeof UserInput.static

export const ApiKeyInput = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: KEY_NAME_MAX }),
    scopes: t.Array(t.String({ minLength: 1, maxLength: 64 }), { maxItems: 64, uniqueItems: true }),
    expiresAt: t.Optional(t.Union([t.String({ format: 'date-time' }), t.Null()])),
  },
  { additionalProperties: false },
)
export type ApiKeyInput = typeof ApiKeyInput.static

/** The limited identity any organization member may resolve. */
export const UserIdentity = t.Object(
  {
    id: UuidString(),
    username: t.String(),
    displayName: t.String(),
    avatarUrl: t.Union([t.String(), t.Null()]),
  },
  { title: 'UserIdentity' },
)

export const UserRole = roleSchema()
export const UserStatus = statusSchema()
export type UserStatus = typeof UserStatus.static

/** `POST /api/v1/users` (and the People page's invite form): an invited user. */
export const InviteInput = t.Object(
  {
    email: t.String({ format: 'email', maxLength: EMAIL_MAX, description: 'Their sign-in name, unique across the service (case-insensitive).' }),
    username: t.Optional(Username('Unique in the organization; default: the e-mail address up to the @, made unique with a number.')),
    displayName: t.Optional(t.String({ minLength: 1, maxLength: DISPLAY_NAME_MAX, description: 'Default: the username.' })),
    role: t.Optional(t.Union([t.Literal('member'), t.Literal('administrator')], { description: 'Default: member. A superadministrator is made by promoting an active user.' })),
  },
  { additionalProperties: false, title: 'InviteInput' },
)
export type InviteInput = typeof InviteInput.static

/** `PATCH /api/v1/users/{userId}`: a new role, a new status, or both. */
export const PersonPatch = t.Object(
  {
    role: t.Optional(UserRole),
    status: t.Optional(t.Union([t.Literal('active'), t.Literal('deactivated')], { description: 'deactivated stops their keys and sessions at once; active reactivates.' })),
  },
  { additionalProperties: false, minProperties: 1, title: 'UserPatch' },
)
export type PersonPatch = typeof PersonPatch.static

/** A user of the people list: limited identity for everyone, and email, role and status for administrators. */
export const Person = t.Object(
  {
    id: UuidString(),
    username: t.String(),
    displayName: t.String(),
    avatarUrl: t.Union([t.String(), t.Null()]),
    email: t.Optional(t.String({ description: 'Administrators and superadministrators only.' })),
    role: t.Optional(roleSchema({ description: 'Administrators and superadministrators only.' })),
    status: t.Optional(statusSchema({ description: 'Administrators and superadministrators only.' })),
  },
  { title: 'Person' },
)

/** A user as an administrator manages them (the answers of the users:write routes). */
export const ManagedUser = t.Object(
  {
    id: UuidString(),
    username: t.String(),
    displayName: t.String(),
    avatarUrl: t.Union([t.String(), t.Null()]),
    email: t.String(),
    role: UserRole,
    status: UserStatus,
  },
  { title: 'ManagedUser' },
)
export type ManagedUser = typeof ManagedUser.static

/** An invited user with their one-time link, shown in this answer only (`GET /users/{id}` shows the user without it). */
export const Invitation = t.Object(
  {
    ...ManagedUser.properties,
    inviteUrl: t.String({ description: 'The one-time link `…/account/invite/<token>`, shown this once; only its hash is stored.' }),
    inviteExpiresAt: Timestamp({ description: 'The link works until then (7 days), once.' }),
  },
  { title: 'InvitedUser' },
)
export type Invitation = typeof Invitation.static

/** A user as other plugins see it when one is created. */
export interface CreatedUser {
  id: string
  organizationId: string
  username: string
}

/**
 * Runs inside the transaction that creates a user (e.g. the display plugin creates the user's
 * display account); the fields it returns are added to the creator's result, shown once.
 */
export type UserCreatedHook = (tx: Transaction, user: CreatedUser) => Promise<Record<string, unknown>>
