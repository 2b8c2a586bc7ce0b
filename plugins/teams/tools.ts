/** MCP tools of the teams plugin: the same bound service as the REST routes. */
import { t } from 'elysia'
import { UuidString } from '../../src/http/models'
import { cursorParameter, pageArguments, pageRequest } from '../../src/http/pagination'
import { defineTool } from '../../src/plugin'
import type { TeamService } from './service'

export function teamTools(teams: TeamService) {
  return [
    defineTool({
      name: 'list_teams',
      description: 'Teams of your organization, oldest first. Continue with `cursor` from meta.nextCursor.',
      scopes: ['teams:read'],
      readOnly: true,
      input: t.Object({ ...pageArguments(), ...cursorParameter() }, { additionalProperties: false }),
      run: (actor, input) => teams.list(actor, pageRequest(input)),
    }),
    defineTool({
      name: 'list_team_members',
      description: 'Members of a team, in the order they joined. Continue with `cursor` from meta.nextCursor.',
      scopes: ['team_members:read'],
      readOnly: true,
      input: t.Object({ teamId: UuidString(), ...pageArguments(), ...cursorParameter() }, { additionalProperties: false }),
      run: (actor, input) => teams.members(actor, input.teamId, pageRequest(input)),
    }),
  ]
}
