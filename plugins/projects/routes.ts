/** API v1 routes of projects, their members and linked teams, and the team → projects directory. */
import { Elysia, t } from 'elysia'
import { Envelope, PageEnvelope, responses } from '../../src/http/envelope'
import { ifMatchHeader } from '../../src/http/answer'
import { Deleted } from '../../src/http/models'
import { cursorParameter, pageQuery, pageRequest } from '../../src/http/pagination'
import type { V1Kit } from '../../src/http/v1'
import type { ProjectExports } from './exports'
import { CSV_COLUMNS, IMPORT_LINE_BYTES, IMPORT_MAX_BYTES, IMPORT_MAX_LINES, type ProjectImports } from './imports'
import type { GrantService } from './grants'
import { AccessLevelPatch, ImportResult, Project, ProjectInput, ProjectMember, ProjectMemberInput, ProjectPatch, ProjectTeam, ProjectTeamInput, TeamProject } from './model'
import type { ProjectService } from './service'

const tags = ['Projects']
const accessTags = ['Project access']
const ProjectParams = t.Object({ projectId: t.String() })
const IfMatch = ifMatchHeader('project')

export function projectRoutes(v1: V1Kit, { projects, grants, exports, imports }: { projects: ProjectService; grants: GrantService; exports: ProjectExports; imports: ProjectImports }) {
    return new Elysia({ name: 'projects', prefix: '/api/v1' })
      .use(v1)
      .get('/projects', ({ actor, query }) => projects.list(actor, pageRequest(query)), {
        scopes: ['projects:read'],
        query: t.Object({ ...pageQuery(), ...cursorParameter() }),
        response: responses(PageEnvelope(Project)),
        detail: { tags, summary: 'Projects you can see (oldest first).' },
      })
      .post(
        '/projects',
        ({ actor, body, idempotency }) => projects.create(actor, body, idempotency),
        {
          scopes: ['projects:write'],
          body: ProjectInput,
          response: responses(Envelope(Project), { status: 201, extra: [409, 422] }),
          detail: {
            tags,
            summary: 'Create a project; you become its owner.',
            description:
              '`key` (`ENG`; work items are `ENG-123`) is unique in the organization. Without one it is derived from the name: the initials of its first four words when it has several (`Mobile App` → `MA`), else its first three letters (`Engineering` → `ENG`), `PRJ` when it has fewer than two letters; then `ENG2`, `ENG3`… when taken. A key any project of the organization has or had is 409 naming `key`.',
          },
        },
      )
      .get(
        '/projects/:projectId',
        ({ actor, params }) => projects.get(actor, params.projectId),
        { scopes: ['projects:read'], params: ProjectParams, response: responses(Envelope(Project)), detail: { tags, summary: 'A project (viewer).' } },
      )
      .patch(
        '/projects/:projectId',
        ({ actor, params, body, headers }) => projects.update(actor, params.projectId, body, headers['if-match']),
        {
          scopes: ['projects:write'],
          params: ProjectParams,
          headers: IfMatch,
          body: ProjectPatch,
          response: responses(Envelope(Project), { extra: [409] }),
          detail: {
            tags,
            summary: 'Update a project (owner).',
            description: "A new `key`: the old one keeps resolving (work item keys too) and stays the project's. A key any project of the organization has or had (this one's old keys included) is 409 naming `key`.",
          },
        },
      )
      .delete('/projects/:projectId', ({ actor, params, headers }) => projects.delete(actor, params.projectId, headers['if-match']), {
        scopes: ['projects:write'],
        params: ProjectParams,
        headers: IfMatch,
        response: responses(Envelope(Deleted), { extra: [409] }),
        detail: { tags, summary: 'Delete a project and everything in it (owner).' },
      })
      .get('/projects/:projectId/export', ({ actor, params, request }) => exports.open(actor, params.projectId, request.signal), {
        scopes: exports.scopes(),
        params: ProjectParams,
        detail: {
          tags,
          summary: "The project's content as NDJSON, one consistent snapshot (owner).",
          description: `One JSON object per line, \`{"type": …, "data": …}\`, \`data\` exactly as API v1 shows the resource, in this order of types: ${exports
            .types()
            .map((type) => `\`${type}\``)
            .join(', ')} (labels and custom fields: those the project uses; work items with their labels, field values and key). Everything is read in one snapshot: a change made meanwhile is in all of it or none. It streams: memory stays flat however large the project, and a client that reads nothing for \`server.exportIdleSeconds\` is cut off. A stream that ends without its last chunk (the connection closed early) is not the whole project. At most \`exportsAtOnce\` (projects plugin) run at once per instance: 503 with Retry-After beyond.`,
          responses: {
            200: { description: 'The export, streamed.', content: { 'application/x-ndjson': { schema: { type: 'string', description: 'Lines of `{"type": string, "data": object}`.' } } } },
          },
        },
      })
      .post('/projects/:projectId/import', ({ actor, params, request }) => imports.run(actor, params.projectId, request), {
        uploads: imports.scopes(),
        params: ProjectParams,
        response: responses(Envelope(ImportResult), { extra: [409] }),
        detail: {
          tags,
          summary: 'Import work into a project that has no work items yet: the NDJSON an export writes, or a CSV of work items (owner).',
          description: `All or nothing, in one transaction. \`Content-Type: application/x-ndjson\`: lines as GET …/export writes them (${imports
            .types()
            .map((type) => `\`${type}\``)
            .join(', ')}; a \`project\` line is read past: the project keeps its own name and key). \`Content-Type: text/csv\`: a header row naming any of ${CSV_COLUMNS.map((column) => `\`${column}\``).join(', ')} (title required), one work item a row; \`labels\` comma-separated names, \`assignee\` an email or username. Every id is new and every reference is remapped; work items keep their numbers (their keys take this project's key) and positions. Labels and custom fields are matched by name and key in the organization; one that is missing is created when you are an administrator, else its line is refused. Assignees, authors and members are matched by id, email or username among the organization's active users; anyone else is left out (unassigned; an entry's author is you) and listed in \`notes\`. A line that cannot be imported is refused by number: 400 with the first 20 (\`line 1207: status: …\`), and nothing is written. A project that already has work items is 409. One audit record and one event \`project.imported\` with the counts; none per item. At most ${IMPORT_MAX_BYTES / 1024 / 1024} MiB and ${IMPORT_MAX_LINES.toLocaleString('en-US')} lines, NDJSON lines of at most ${IMPORT_LINE_BYTES / 1024 / 1024} MiB.`,
          requestBody: {
            required: true,
            content: {
              'application/x-ndjson': { schema: { type: 'string', description: 'Lines of `{"type": string, "data": object}`, as GET …/export writes them.' } },
              'text/csv': { schema: { type: 'string', description: `A header row (${CSV_COLUMNS.join(', ')}), then one work item a row.` } },
            },
          },
        },
      })
      .get('/projects/:projectId/members', ({ actor, params, query }) => grants.members.list(actor, params.projectId, pageRequest(query)), {
        scopes: ['project_access:read'],
        params: ProjectParams,
        query: t.Object({ ...pageQuery(), ...cursorParameter() }),
        response: responses(PageEnvelope(ProjectMember)),
        detail: { tags: accessTags, summary: 'Direct members of a project (viewer).' },
      })
      .post(
        '/projects/:projectId/members',
        ({ actor, params, body, idempotency }) => grants.members.add(actor, params.projectId, body.userId, body.accessLevel, idempotency),
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
        ({ actor, params, body }) => grants.members.update(actor, params.projectId, params.userId, body.accessLevel),
        {
          scopes: ['project_access:write'],
          params: t.Object({ projectId: t.String(), userId: t.String() }),
          body: AccessLevelPatch,
          response: responses(Envelope(ProjectMember), { extra: [409] }),
          detail: { tags: accessTags, summary: "Change a member's level (owner); demoting the last owner is 409." },
        },
      )
      .delete('/projects/:projectId/members/:userId', ({ actor, params }) => grants.members.remove(actor, params.projectId, params.userId), {
        scopes: ['project_access:write'],
        params: t.Object({ projectId: t.String(), userId: t.String() }),
        response: responses(Envelope(Deleted), { extra: [409] }),
        detail: { tags: accessTags, summary: 'Remove a member (owner); removing the last owner is 409.' },
      })
      .get('/projects/:projectId/teams', ({ actor, params, query }) => grants.teams.list(actor, params.projectId, pageRequest(query)), {
        scopes: ['project_access:read'],
        params: ProjectParams,
        query: t.Object({ ...pageQuery(), ...cursorParameter() }),
        response: responses(PageEnvelope(ProjectTeam)),
        detail: { tags: accessTags, summary: 'Teams linked to a project (viewer).' },
      })
      .post(
        '/projects/:projectId/teams',
        ({ actor, params, body, idempotency }) => grants.teams.add(actor, params.projectId, body.teamId, body.accessLevel, idempotency),
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
        ({ actor, params, body }) => grants.teams.update(actor, params.projectId, params.teamId, body.accessLevel),
        {
          scopes: ['project_access:write'],
          params: t.Object({ projectId: t.String(), teamId: t.String() }),
          body: AccessLevelPatch,
          response: responses(Envelope(ProjectTeam), { extra: [409] }),
          detail: { tags: accessTags, summary: "Change a linked team's level (owner)." },
        },
      )
      .delete('/projects/:projectId/teams/:teamId', ({ actor, params }) => grants.teams.remove(actor, params.projectId, params.teamId), {
        scopes: ['project_access:write'],
        params: t.Object({ projectId: t.String(), teamId: t.String() }),
        response: responses(Envelope(Deleted), { extra: [409] }),
        detail: { tags: accessTags, summary: 'Unlink a team (owner).' },
      })
      .get('/teams/:teamId/projects', ({ actor, params, query }) => projects.teamProjects(actor, params.teamId, pageRequest(query)), {
        scopes: ['team_projects:read'],
        params: t.Object({ teamId: t.String() }),
        query: t.Object({ ...pageQuery(), ...cursorParameter() }),
        response: responses(PageEnvelope(TeamProject)),
        detail: {
          tags: ['Teams'],
          summary: 'Projects linked to a team: an organization-wide directory (scope only), read only. Links are managed on the project.',
        },
      })
}
