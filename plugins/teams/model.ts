/** Request and response models of teams and team members. */
import { t } from 'elysia'
import { Timestamp, UserRef, UuidString } from '../../src/http/models'
import { UserIdentity } from '../auth/api'

export const NAME_MAX = 200
export const DESCRIPTION_MAX = 10_000

export const Team = t.Object(
  {
    id: UuidString(),
    name: t.String(),
    description: t.Union([t.String(), t.Null()]),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'Team' },
)

export const TeamInput = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: NAME_MAX, description: `1..${NAME_MAX} characters, unique in the organization (case-insensitive).` }),
    description: t.Optional(t.Union([t.String({ maxLength: DESCRIPTION_MAX }), t.Null()])),
  },
  { additionalProperties: false },
)

export const TeamPatch = t.Object(
  {
    name: t.Optional(t.String({ minLength: 1, maxLength: NAME_MAX })),
    description: t.Optional(t.Union([t.String({ maxLength: DESCRIPTION_MAX }), t.Null()])),
  },
  { additionalProperties: false, minProperties: 1 },
)

export const TeamMember = t.Object(
  { userId: UuidString(), user: UserIdentity, createdAt: Timestamp() },
  { title: 'TeamMember' },
)

export const TeamMemberInput = t.Object({ userId: UserRef }, { additionalProperties: false })

export type TeamInput = typeof TeamInput.static
export type TeamPatch = typeof TeamPatch.static
export type TeamMemberInput = typeof TeamMemberInput.static
