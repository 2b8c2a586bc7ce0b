/** API v1 routes of teams and team members over the bound team service. */
import { Elysia, t } from 'elysia'
import { Envelope, PageEnvelope, responses } from '../../src/http/envelope'
import { ifMatchHeader } from '../../src/http/answer'
import { Deleted } from '../../src/http/models'
import { cursorParameter, pageQuery, pageRequest } from '../../src/http/pagination'
import type { V1Kit } from '../../src/http/v1'
import { Team, TeamInput, TeamMember, TeamMemberInput, TeamPatch } from './model'
import type { TeamService } from './service'

const tags = ['Teams']
const TeamParams = t.Object({ teamId: t.String() })
const IfMatch = ifMatchHeader('team')

export function teamRoutes(v1: V1Kit, teams: TeamService) {
  return new Elysia({ name: 'teams', prefix: '/api/v1/teams' })
    .use(v1)
    .get('', ({ actor, query }) => teams.list(actor, pageRequest(query)), {
      scopes: ['teams:read'],
      query: t.Object({ ...pageQuery(), ...cursorParameter() }),
      response: responses(PageEnvelope(Team)),
      detail: { tags, summary: 'List the teams of your organization (oldest first).' },
    })
    .post(
      '',
      ({ actor, body, idempotency }) => teams.create(actor, body, idempotency),
      {
        scopes: ['teams:write'],
        body: TeamInput,
        response: responses(Envelope(Team), { status: 201, extra: [409, 422] }),
        detail: { tags, summary: 'Create a team (administrators). 409 names the existing team on a duplicate name.' },
      },
    )
    .get(
      '/:teamId',
      ({ actor, params }) => teams.get(actor, params.teamId),
      { scopes: ['teams:read'], params: TeamParams, response: responses(Envelope(Team)), detail: { tags, summary: 'A team.' } },
    )
    .patch(
      '/:teamId',
      ({ actor, params, body, headers }) => teams.update(actor, params.teamId, body, headers['if-match']),
      {
        scopes: ['teams:write'],
        params: TeamParams,
        headers: IfMatch,
        body: TeamPatch,
        response: responses(Envelope(Team), { extra: [409] }),
        detail: { tags, summary: 'Update a team (administrators).' },
      },
    )
    .delete('/:teamId', ({ actor, params, headers }) => teams.delete(actor, params.teamId, headers['if-match']), {
      scopes: ['teams:write'],
      params: TeamParams,
      headers: IfMatch,
      response: responses(Envelope(Deleted), { extra: [409] }),
      detail: { tags, summary: 'Delete a team (administrators); its memberships and project links go with it.' },
    })
    .get('/:teamId/members', ({ actor, params, query }) => teams.members(actor, params.teamId, pageRequest(query)), {
      scopes: ['team_members:read'],
      params: TeamParams,
      query: t.Object({ ...pageQuery(), ...cursorParameter() }),
      response: responses(PageEnvelope(TeamMember)),
      detail: { tags, summary: 'Members of a team.' },
    })
    .post(
      '/:teamId/members',
      ({ actor, params, body, idempotency }) => teams.addMember(actor, params.teamId, body, idempotency),
      {
        scopes: ['team_members:write'],
        params: TeamParams,
        body: TeamMemberInput,
        response: responses(Envelope(TeamMember), { status: 201, extra: [409, 422] }),
        detail: { tags, summary: 'Add an active user of your organization (`userId`; `me`: yourself) to a team (administrators).' },
      },
    )
    .delete('/:teamId/members/:userId', ({ actor, params }) => teams.removeMember(actor, params.teamId, params.userId), {
      scopes: ['team_members:write'],
      params: t.Object({ teamId: t.String(), userId: t.String() }),
      response: responses(Envelope(Deleted)),
      detail: { tags, summary: 'Remove a member from a team (administrators).' },
    })
}
