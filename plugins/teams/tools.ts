/** MCP tools of the teams plugin: the same service functions as the REST routes. */
import { t } from 'elysia'
import { UuidString } from '../../src/http/models'
import { pageArguments, pageRequest } from '../../src/http/pagination'
import { defineTool, type PluginContext } from '../../src/plugin'
import * as Teams from './service'

export function teamTools({ db }: PluginContext) {
  return [
    defineTool({
      name: 'list_teams',
      description: 'Teams of your organization, oldest first.',
      scopes: ['teams:read'],
      readOnly: true,
      input: t.Object(pageArguments(), { additionalProperties: false }),
      run: (actor, input) => Teams.listTeams(db, actor, pageRequest(input)),
    }),
    defineTool({
      name: 'list_team_members',
      description: 'Members of a team.',
      scopes: ['team_members:read'],
      readOnly: true,
      input: t.Object({ teamId: UuidString(), ...pageArguments() }, { additionalProperties: false }),
      run: (actor, input) => Teams.listTeamMembers(db, actor, input.teamId, pageRequest(input)),
    }),
  ]
}
