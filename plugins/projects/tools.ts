/** MCP tools of the projects plugin: the same bound services as the REST routes. */
import { t } from 'elysia'
import { UuidString } from '../../src/http/models'
import { cursorParameter, pageArguments, pageRequest } from '../../src/http/pagination'
import { defineTool } from '../../src/plugin'
import type { GrantService } from './grants'
import { ProjectInput } from './model'
import type { ProjectService } from './service'

export function projectTools({ projects, grants }: { projects: ProjectService; grants: GrantService }) {
  return [
    defineTool({
      name: 'list_projects',
      description: 'Projects you can see, oldest first. Continue with `cursor` from meta.nextCursor.',
      scopes: ['projects:read'],
      readOnly: true,
      input: t.Object({ ...pageArguments(), ...cursorParameter() }, { additionalProperties: false }),
      run: (actor, input) => projects.list(actor, pageRequest(input)),
    }),
    defineTool({
      name: 'get_project',
      description: 'One project you can see.',
      scopes: ['projects:read'],
      readOnly: true,
      input: t.Object({ projectId: UuidString() }, { additionalProperties: false }),
      run: (actor, input) => projects.get(actor, input.projectId),
    }),
    defineTool({
      name: 'create_project',
      description: 'Create a project; you become its owner. `key` (ENG: work items are ENG-123) is derived from the name when not given; one any project of the organization has or had is refused.',
      scopes: ['projects:write'],
      input: ProjectInput,
      run: (actor, input) => projects.create(actor, input),
    }),
    defineTool({
      name: 'list_project_members',
      description: 'Direct members of a project with their access level. Continue with `cursor` from meta.nextCursor.',
      scopes: ['project_access:read'],
      readOnly: true,
      input: t.Object({ projectId: UuidString(), ...pageArguments(), ...cursorParameter() }, { additionalProperties: false }),
      run: (actor, input) => grants.members.list(actor, input.projectId, pageRequest(input)),
    }),
    defineTool({
      name: 'list_team_projects',
      description: "Projects linked to a team, with the team's level: an organization-wide directory (visible or not). Continue with `cursor` from meta.nextCursor.",
      scopes: ['team_projects:read'],
      readOnly: true,
      input: t.Object({ teamId: UuidString(), ...pageArguments(), ...cursorParameter() }, { additionalProperties: false }),
      run: (actor, input) => projects.teamProjects(actor, input.teamId, pageRequest(input)),
    }),
  ]
}
