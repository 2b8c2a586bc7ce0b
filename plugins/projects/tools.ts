/** MCP tools of the projects plugin: the same service functions as the REST routes. */
import { t } from 'elysia'
import { UuidString } from '../../src/http/models'
import { pageArguments, pageRequest } from '../../src/http/pagination'
import { defineTool, type PluginContext } from '../../src/plugin'
import { ProjectAccessRef } from '../../src/services/access'
import * as Grants from './grants'
import * as Projects from './service'

export function projectTools({ db, services }: PluginContext) {
  const access = services.get(ProjectAccessRef)
  return [
    defineTool({
      name: 'list_projects',
      description: 'Projects you can see, oldest first.',
      scopes: ['projects:read'],
      readOnly: true,
      input: t.Object(pageArguments(), { additionalProperties: false }),
      run: (actor, input) => Projects.listProjects(db, actor, pageRequest(input)),
    }),
    defineTool({
      name: 'get_project',
      description: 'One project you can see.',
      scopes: ['projects:read'],
      readOnly: true,
      input: t.Object({ projectId: UuidString() }, { additionalProperties: false }),
      run: async (actor, input) => Projects.serializeProject(await Projects.getProject(db, access, actor, input.projectId)),
    }),
    defineTool({
      name: 'list_project_members',
      description: 'Direct members of a project with their access level.',
      scopes: ['project_access:read'],
      readOnly: true,
      input: t.Object({ projectId: UuidString(), ...pageArguments() }, { additionalProperties: false }),
      run: (actor, input) => Grants.listMembers(db, access, actor, input.projectId, pageRequest(input)),
    }),
    defineTool({
      name: 'list_team_projects',
      description: "Projects linked to a team, with the team's level: an organization-wide directory (visible or not).",
      scopes: ['team_projects:read'],
      readOnly: true,
      input: t.Object({ teamId: UuidString(), ...pageArguments() }, { additionalProperties: false }),
      run: (actor, input) => Projects.listTeamProjects(db, actor, input.teamId, pageRequest(input)),
    }),
  ]
}
