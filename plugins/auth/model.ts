/**
 * Input models of organizations, users and API keys (CLI and account area alike), and the hook a
 * new user's creation runs (api.ts shows it to other plugins; it is here because the creation in
 * service.ts needs it and api.ts re-exports service.ts's accountsFor).
 */
import { t } from 'elysia'
import type { Transaction } from '../../src/db'
import { UuidString } from '../../src/http/models'

export const EMAIL_MAX = 254
export const KEY_NAME_MAX = 100
export const PASSWORD_MAX = 1024

export const OrganizationInput = t.Object({ name: t.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false })

export const UserInput = t.Object(
  {
    organizationId: UuidString(),
    email: t.String({ format: 'email', maxLength: EMAIL_MAX }),
    username: t.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' }),
    displayName: t.String({ minLength: 1, maxLength: 200 }),
    role: t.Union([t.Literal('member'), t.Literal('administrator'), t.Literal('superadministrator')]),
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
