/** Request and response models of projects, project members and project-team links. */
import { t } from 'elysia'
import { Timestamp, UuidString } from '../../src/http/models'
import { UserIdentity } from '../auth/api'

export const NAME_MAX = 200
export const DESCRIPTION_MAX = 10_000

export const AccessLevel = t.Union([t.Literal('viewer'), t.Literal('editor'), t.Literal('owner')], {
  description: 'viewer < editor < owner',
})

export const Project = t.Object(
  {
    id: UuidString(),
    name: t.String(),
    description: t.Union([t.String(), t.Null()]),
    createdBy: t.Union([UuidString(), t.Null()]),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'Project' },
)

export const ProjectInput = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: NAME_MAX }),
    description: t.Optional(t.Union([t.String({ maxLength: DESCRIPTION_MAX }), t.Null()])),
  },
  { additionalProperties: false },
)

export const ProjectPatch = t.Object(
  {
    name: t.Optional(t.String({ minLength: 1, maxLength: NAME_MAX })),
    description: t.Optional(t.Union([t.String({ maxLength: DESCRIPTION_MAX }), t.Null()])),
  },
  { additionalProperties: false, minProperties: 1 },
)

export const ProjectMember = t.Object(
  { userId: UuidString(), accessLevel: AccessLevel, user: UserIdentity, createdAt: Timestamp() },
  { title: 'ProjectMember' },
)

export const ProjectMemberInput = t.Object({ userId: UuidString(), accessLevel: AccessLevel }, { additionalProperties: false })

export const ProjectTeam = t.Object(
  { teamId: UuidString(), accessLevel: AccessLevel, team: t.Object({ id: UuidString(), name: t.String() }), createdAt: Timestamp() },
  { title: 'ProjectTeam' },
)

export const ProjectTeamInput = t.Object({ teamId: UuidString(), accessLevel: AccessLevel }, { additionalProperties: false })

export const AccessLevelPatch = t.Object({ accessLevel: AccessLevel }, { additionalProperties: false })

/** An entry of the organization-wide team → projects directory. */
export const TeamProject = t.Object({ id: UuidString(), name: t.String(), accessLevel: AccessLevel }, { title: 'TeamProject' })

export type ProjectInput = typeof ProjectInput.static
export type ProjectPatch = typeof ProjectPatch.static
export type ProjectMemberInput = typeof ProjectMemberInput.static
export type ProjectTeamInput = typeof ProjectTeamInput.static
