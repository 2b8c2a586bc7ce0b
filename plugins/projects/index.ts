/** The `projects` plugin: projects, members, team links, and the project access service. */
import { Elysia, t } from 'elysia'
import { Envelope, PageEnvelope, responses } from '../../src/http/envelope'
import { etagOf, ifMatchHeader } from '../../src/http/etag'
import { Deleted } from '../../src/http/models'
import { pageQuery, pageRequest } from '../../src/http/pagination'
import { definePlugin } from '../../src/plugin'
import { projectTools } from './tools'
import { ProjectAccessRef } from '../../src/services/access'
import { UserDirectoryRef } from '../../src/services/auth'
import { createProjectAccess } from './access'
import * as Grants from './grants'
import { AccessLevelPatch, Project, ProjectInput, ProjectMember, ProjectMemberInput, ProjectPatch, ProjectTeam, ProjectTeamInput, TeamProject } from './model'
import { projectMembers, projects, projectTeams } from './schema'
import * as Projects from './service'

const tags = ['Projects']
const accessTags = ['Project access']
const ProjectParams = t.Object({ projectId: t.String() })
const IfMatch = ifMatchHeader('project')

export default definePlugin({
  name: 'projects',
  description: 'Projects, their members and linked teams, and the access service every project-scoped plugin uses.',
  dependencies: ['auth', 'teams'],
  tables: { projects, projectMembers, projectTeams },
  scopes: [
    { name: 'projects:read', description: 'Read projects you can see.' },
    { name: 'projects:write', description: 'Create projects; update and delete the ones you own.' },
    { name: 'project_access:read', description: 'Read project members and linked teams.' },
    { name: 'project_access:write', description: 'Change project members and linked teams (owners).' },
    { name: 'team_projects:read', description: 'Read the projects linked to a team (organization-wide directory).' },
  ],
  tags: [
    { name: 'Projects', description: 'Projects visible to the key owner. Viewer reads; owner updates and deletes.' },
    { name: 'Project access', description: 'Members and linked teams: viewer reads, owner changes. A project always keeps an owner.' },
  ],
  tools: projectTools,


  setup({ db, services }) {
    services.provide(ProjectAccessRef, createProjectAccess(db))
  },

  routes: ({ db, http, services }) => {
    const access = services.get(ProjectAccessRef)
    const directory = services.get(UserDirectoryRef)
    return new Elysia({ name: 'projects', prefix: '/api/v1' })
      .use(http.v1)
      .get('/projects', ({ actor, query }) => Projects.listProjects(db, actor, pageRequest(query)), {
        scopes: ['projects:read'],
        query: t.Object(pageQuery()),
        response: responses(PageEnvelope(Project)),
        detail: { tags, summary: 'Projects you can see (oldest first).' },
      })
      .post(
        '/projects',
        async ({ actor, body, set }) => {
          set.status = 201
          const project = await Projects.createProject(db, actor, body)
          set.headers.etag = etagOf(project.updatedAt)
          return project
        },
        {
          scopes: ['projects:write'],
          body: ProjectInput,
          response: responses(Envelope(Project), { status: 201, extra: [422] }),
          detail: { tags, summary: 'Create a project; you become its owner.' },
        },
      )
      .get(
        '/projects/:projectId',
        async ({ actor, params, set }) => {
          const project = await Projects.getProject(db, access, actor, params.projectId)
          set.headers.etag = etagOf(project.updatedAt)
          return Projects.serializeProject(project)
        },
        { scopes: ['projects:read'], params: ProjectParams, response: responses(Envelope(Project)), detail: { tags, summary: 'A project (viewer).' } },
      )
      .patch(
        '/projects/:projectId',
        async ({ actor, params, body, headers, set }) => {
          const project = await Projects.updateProject(db, access, actor, params.projectId, body, headers['if-match'])
          set.headers.etag = etagOf(project.updatedAt)
          return Projects.serializeProject(project)
        },
        {
          scopes: ['projects:write'],
          params: ProjectParams,
          headers: IfMatch,
          body: ProjectPatch,
          response: responses(Envelope(Project), { extra: [409] }),
          detail: { tags, summary: 'Update a project (owner).' },
        },
      )
      .delete('/projects/:projectId', ({ actor, params, headers }) => Projects.deleteProject(db, access, actor, params.projectId, headers['if-match']), {
        scopes: ['projects:write'],
        params: ProjectParams,
        headers: IfMatch,
        response: responses(Envelope(Deleted), { extra: [409] }),
        detail: { tags, summary: 'Delete a project and everything in it (owner).' },
      })
      .get('/projects/:projectId/members', ({ actor, params, query }) => Grants.listMembers(db, access, actor, params.projectId, pageRequest(query)), {
        scopes: ['project_access:read'],
        params: ProjectParams,
        query: t.Object(pageQuery()),
        response: responses(PageEnvelope(ProjectMember)),
        detail: { tags: accessTags, summary: 'Direct members of a project (viewer).' },
      })
      .post(
        '/projects/:projectId/members',
        async ({ actor, params, body, set }) => {
          set.status = 201
          return Grants.addMember(db, access, directory, actor, params.projectId, body)
        },
        {
          scopes: ['project_access:write'],
          params: ProjectParams,
          body: ProjectMemberInput,
          response: responses(Envelope(ProjectMember), { status: 201, extra: [409, 422] }),
          detail: { tags: accessTags, summary: 'Add an active user of your organization as a member (owner).' },
        },
      )
      .patch(
        '/projects/:projectId/members/:userId',
        ({ actor, params, body }) => Grants.updateMember(db, access, actor, params.projectId, params.userId, body.accessLevel),
        {
          scopes: ['project_access:write'],
          params: t.Object({ projectId: t.String(), userId: t.String() }),
          body: AccessLevelPatch,
          response: responses(Envelope(ProjectMember), { extra: [409] }),
          detail: { tags: accessTags, summary: "Change a member's level (owner); demoting the last owner is 409." },
        },
      )
      .delete('/projects/:projectId/members/:userId', ({ actor, params }) => Grants.removeMember(db, access, actor, params.projectId, params.userId), {
        scopes: ['project_access:write'],
        params: t.Object({ projectId: t.String(), userId: t.String() }),
        response: responses(Envelope(Deleted), { extra: [409] }),
        detail: { tags: accessTags, summary: 'Remove a member (owner); removing the last owner is 409.' },
      })
      .get('/projects/:projectId/teams', ({ actor, params, query }) => Grants.listTeamLinks(db, access, actor, params.projectId, pageRequest(query)), {
        scopes: ['project_access:read'],
        params: ProjectParams,
        query: t.Object(pageQuery()),
        response: responses(PageEnvelope(ProjectTeam)),
        detail: { tags: accessTags, summary: 'Teams linked to a project (viewer).' },
      })
      .post(
        '/projects/:projectId/teams',
        async ({ actor, params, body, set }) => {
          set.status = 201
          return Grants.linkTeam(db, access, actor, params.projectId, body)
        },
        {
          scopes: ['project_access:write'],
          params: ProjectParams,
          body: ProjectTeamInput,
          response: responses(Envelope(ProjectTeam), { status: 201, extra: [409, 422] }),
          detail: { tags: accessTags, summary: 'Link a team of your organization with a level (owner).' },
        },
      )
      .patch(
        '/projects/:projectId/teams/:teamId',
        ({ actor, params, body }) => Grants.updateTeamLink(db, access, actor, params.projectId, params.teamId, body.accessLevel),
        {
          scopes: ['project_access:write'],
          params: t.Object({ projectId: t.String(), teamId: t.String() }),
          body: AccessLevelPatch,
          response: responses(Envelope(ProjectTeam), { extra: [409] }),
          detail: { tags: accessTags, summary: "Change a linked team's level (owner)." },
        },
      )
      .delete('/projects/:projectId/teams/:teamId', ({ actor, params }) => Grants.unlinkTeam(db, access, actor, params.projectId, params.teamId), {
        scopes: ['project_access:write'],
        params: t.Object({ projectId: t.String(), teamId: t.String() }),
        response: responses(Envelope(Deleted), { extra: [409] }),
        detail: { tags: accessTags, summary: 'Unlink a team (owner).' },
      })
      .get('/teams/:teamId/projects', ({ actor, params, query }) => Projects.listTeamProjects(db, actor, params.teamId, pageRequest(query)), {
        scopes: ['team_projects:read'],
        params: t.Object({ teamId: t.String() }),
        query: t.Object(pageQuery()),
        response: responses(PageEnvelope(TeamProject)),
        detail: {
          tags: ['Teams'],
          summary: 'Projects linked to a team: an organization-wide directory (scope only), read only. Links are managed on the project.',
        },
      })
  },
})
