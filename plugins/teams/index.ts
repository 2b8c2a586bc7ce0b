/** The `teams` plugin: teams and team membership, organization-wide. */
import { Elysia, t } from 'elysia'
import { Envelope, PageEnvelope, responses } from '../../src/http/envelope'
import { etagOf, ifMatchHeader } from '../../src/http/etag'
import { Deleted } from '../../src/http/models'
import { pageQuery, pageRequest } from '../../src/http/pagination'
import { definePlugin } from '../../src/plugin'
import { teamTools } from './tools'
import { UserDirectoryRef } from '../../src/services/auth'
import { TeamEventsRef } from '../../src/services/teams'
import { Team, TeamInput, TeamMember, TeamMemberInput, TeamPatch } from './model'
import { teamMembers, teams } from './schema'
import * as Teams from './service'

const tags = ['Teams']
const TeamParams = t.Object({ teamId: t.String() })
const IfMatch = ifMatchHeader('team')

export default definePlugin({
  name: 'teams',
  description: 'Teams and their members; reads organization-wide, writes by administrators.',
  dependencies: ['auth'],
  tables: { teams, teamMembers },
  scopes: [
    { name: 'teams:read', description: 'Read teams.' },
    { name: 'teams:write', description: 'Create, update and delete teams (administrators).' },
    { name: 'team_members:read', description: 'Read team membership.' },
    { name: 'team_members:write', description: 'Add and remove team members (administrators).' },
  ],
  tags: [{ name: 'Teams', description: 'Teams and membership. Reads need only the scope; writes need an administrator or superadministrator.' }],
  tools: teamTools,

  async setup({ events, services }) {
    services.provide(TeamEventsRef, {
      onMembershipLost: async (listener, onResync) => void (await events.subscribe(Teams.TEAM_MEMBERSHIP_CHANNEL, listener, onResync)),
    })
  },

  routes: ({ db, http, services }) =>
    new Elysia({ name: 'teams', prefix: '/api/v1/teams' })
      .use(http.v1)
      .get('', async ({ actor, query }) => Teams.listTeams(db, actor, pageRequest(query)), {
        scopes: ['teams:read'],
        query: t.Object(pageQuery()),
        response: responses(PageEnvelope(Team)),
        detail: { tags, summary: 'List the teams of your organization (oldest first).' },
      })
      .post(
        '',
        async ({ actor, body, set }) => {
          set.status = 201
          const team = await Teams.createTeam(db, actor, body)
          set.headers.etag = etagOf(team.updatedAt)
          return team
        },
        {
          scopes: ['teams:write'],
          body: TeamInput,
          response: responses(Envelope(Team), { status: 201, extra: [409, 422] }),
          detail: { tags, summary: 'Create a team (administrators). 409 names the existing team on a duplicate name.' },
        },
      )
      .get(
        '/:teamId',
        async ({ actor, params, set }) => {
          const team = await Teams.findTeam(db, actor, params.teamId)
          set.headers.etag = etagOf(team.updatedAt)
          return Teams.serializeTeam(team)
        },
        { scopes: ['teams:read'], params: TeamParams, response: responses(Envelope(Team)), detail: { tags, summary: 'A team.' } },
      )
      .patch(
        '/:teamId',
        async ({ actor, params, body, headers, set }) => {
          const team = await Teams.updateTeam(db, actor, params.teamId, body, headers['if-match'])
          set.headers.etag = etagOf(team.updatedAt)
          return Teams.serializeTeam(team)
        },
        {
          scopes: ['teams:write'],
          params: TeamParams,
          headers: IfMatch,
          body: TeamPatch,
          response: responses(Envelope(Team), { extra: [409] }),
          detail: { tags, summary: 'Update a team (administrators).' },
        },
      )
      .delete('/:teamId', ({ actor, params, headers }) => Teams.deleteTeam(db, actor, params.teamId, headers['if-match']), {
        scopes: ['teams:write'],
        params: TeamParams,
        headers: IfMatch,
        response: responses(Envelope(Deleted), { extra: [409] }),
        detail: { tags, summary: 'Delete a team (administrators); its memberships and project links go with it.' },
      })
      .get('/:teamId/members', ({ actor, params, query }) => Teams.listTeamMembers(db, actor, params.teamId, pageRequest(query)), {
        scopes: ['team_members:read'],
        params: TeamParams,
        query: t.Object(pageQuery()),
        response: responses(PageEnvelope(TeamMember)),
        detail: { tags, summary: 'Members of a team.' },
      })
      .post(
        '/:teamId/members',
        async ({ actor, params, body, set }) => {
          set.status = 201
          return Teams.addTeamMember(db, services.get(UserDirectoryRef), actor, params.teamId, body)
        },
        {
          scopes: ['team_members:write'],
          params: TeamParams,
          body: TeamMemberInput,
          response: responses(Envelope(TeamMember), { status: 201, extra: [409, 422] }),
          detail: { tags, summary: 'Add an active user of your organization to a team (administrators).' },
        },
      )
      .delete('/:teamId/members/:userId', ({ actor, params }) => Teams.removeTeamMember(db, actor, params.teamId, params.userId), {
        scopes: ['team_members:write'],
        params: t.Object({ teamId: t.String(), userId: t.String() }),
        response: responses(Envelope(Deleted)),
        detail: { tags, summary: 'Remove a member from a team (administrators).' },
      }),
})
