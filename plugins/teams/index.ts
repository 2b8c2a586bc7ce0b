/** The `teams` plugin: teams and team membership, organization-wide. */
import { definePlugin } from '../../src/plugin'
import { UserDirectoryRef } from '../auth/api'
import { TeamDirectoryRef, TeamEventsRef } from './api'
import { teamRoutes } from './routes'
import { teamMembers, teams } from './schema'
import { createTeams, organizationTeam, TEAM_MEMBERSHIP_CHANNEL } from './service'
import { teamTools } from './tools'

export default definePlugin({
  name: 'teams',
  description: 'Teams and their members; reads organization-wide, writes by administrators.',
  dependencies: ['auth'],
  tables: { teams, teamMembers },
  readModels: {
    team_directory: 'Team names: id, organization_id, name.',
    team_memberships: 'Who is in which team: team_id, user_id, organization_id.',
  },
  scopes: [
    { name: 'teams:read', description: 'Read teams.' },
    { name: 'teams:write', description: 'Create, update and delete teams (administrators).', administratorsOnly: true },
    { name: 'team_members:read', description: 'Read team membership.' },
    { name: 'team_members:write', description: 'Add and remove team members (administrators).', administratorsOnly: true },
  ],
  tags: [{ name: 'Teams', description: 'Teams and membership. Reads need only the scope; writes need an administrator or superadministrator.' }],

  setup({ db, events, services, lists, writes }) {
    services.provide(TeamDirectoryRef, { find: organizationTeam })
    services.provide(TeamEventsRef, {
      onMembershipLost: async (listener, onResync) => void (await events.subscribe(TEAM_MEMBERSHIP_CHANNEL, listener, onResync)),
    })
    return { teams: createTeams({ db, lists, writes, users: services.get(UserDirectoryRef) }) }
  },
  routes: ({ http }, { teams }) => teamRoutes(http.v1, teams),
  tools: (_context, { teams }) => teamTools(teams),
})
