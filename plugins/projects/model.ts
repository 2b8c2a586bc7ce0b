/** Request and response models of projects, project members and project-team links. */
import { t } from 'elysia'
import { Timestamp, UserRef, UuidString } from '../../src/http/models'
import { UserIdentity } from '../auth/api'
import { PROJECT_KEY_PATTERN, PROJECT_KEY_WORDS } from './keys'

export const NAME_MAX = 200
export const DESCRIPTION_MAX = 10_000

export const AccessLevel = t.Union([t.Literal('viewer'), t.Literal('editor'), t.Literal('owner')], {
  description: 'viewer < editor < owner',
})

/**
 * A project key in a request: any case, stored upper-case; 409 when any project of the organization
 * has or had it. Its description is the form alone (a refusal quotes it); the routes say the rest.
 */
const ProjectKey = t.String({ pattern: PROJECT_KEY_PATTERN, description: PROJECT_KEY_WORDS })

export const Project = t.Object(
  {
    id: UuidString(),
    key: t.String({ description: 'What people say (`ENG`): 2 to 10 of A-Z and 0-9, starting with a letter, unique in the organization. Work items are `<key>-<number>`; an old key keeps resolving.' }),
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
    key: t.Optional(ProjectKey),
    description: t.Optional(t.Union([t.String({ maxLength: DESCRIPTION_MAX }), t.Null()])),
  },
  { additionalProperties: false },
)

export const ProjectPatch = t.Object(
  {
    name: t.Optional(t.String({ minLength: 1, maxLength: NAME_MAX })),
    key: t.Optional(ProjectKey),
    description: t.Optional(t.Union([t.String({ maxLength: DESCRIPTION_MAX }), t.Null()])),
  },
  { additionalProperties: false, minProperties: 1 },
)

export const ProjectMember = t.Object(
  { userId: UuidString(), accessLevel: AccessLevel, user: UserIdentity, createdAt: Timestamp() },
  { title: 'ProjectMember' },
)

export const ProjectMemberInput = t.Object({ userId: UserRef, accessLevel: AccessLevel }, { additionalProperties: false })

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

/** What an import did (POST /api/v1/projects/{projectId}/import). */
export const ImportResult = t.Object({
  projectId: t.String({ format: 'uuid' }),
  imported: t.Record(t.String(), t.Integer({ minimum: 0 }), { description: 'Resources written, by line type (`work_item`: 1200).' }),
  notes: t.Array(t.String(), { description: 'What was imported otherwise than given (the first 20), each `line N: …`: an assignee not in the organization left unassigned.' }),
})
