/** The `projects` plugin: projects, members, team links, and the project access service. */
import { Type } from '@sinclair/typebox'
import { crudEvents } from '../../src/changes'
import { definePlugin } from '../../src/plugin'
import { UserDirectoryRef } from '../auth/api'
import { TeamDirectoryRef } from '../teams/api'
import { createAccessGroups, createProjectAccess } from './access'
import { ProjectAccessRef, ProjectTransfersRef } from './api'
import { createExports } from './exports'
import { createImports, memberImportSection } from './imports'
import { createGrants } from './grants'
import { projectRoutes } from './routes'
import { projectKeys, projectMembers, projects, projectTeams } from './schema'
import { createProjects } from './service'
import { projectTools } from './tools'

const ProjectsConfig = Type.Object({
  groupChecks: Type.Boolean({
    default: true,
    description: 'Project access checks (with the list versions) arriving while check statements run go together as one statement (exact per caller; see docs/performance.md).',
  }),
  maxChecksPerGroup: Type.Integer({ minimum: 2, maximum: 10_000, default: 256, description: 'Most access checks in one grouped statement.' }),
  checkStatements: Type.Integer({ minimum: 1, maximum: 64, default: 4, description: 'Access check statements in flight at once per instance; checks beyond them wait and group.' }),
  exportsAtOnce: Type.Integer({
    minimum: 1,
    maximum: 100,
    default: 2,
    description: 'Project exports streaming at once per instance (each holds a database connection for its snapshot); more are 503 with Retry-After.',
  }),
  importsAtOnce: Type.Integer({
    minimum: 1,
    maximum: 100,
    default: 1,
    description: 'Project imports at once per instance; more are 503 with Retry-After. Each holds its parsed body in memory (about 11 times its size: some 700 MiB for the largest, 64 MiB, body) and then a database connection.',
  }),
  importReadSeconds: Type.Integer({ minimum: 1, maximum: 3600, default: 300, description: 'How long an import body may take to arrive; a client that stops sending mid-body is cut off (400).' }),
})

export default definePlugin({
  name: 'projects',
  description: 'Projects, their members and linked teams, and the access service every project-scoped plugin uses.',
  dependencies: ['auth', 'teams'],
  config: ProjectsConfig,
  tables: { projects, projectKeys, projectMembers, projectTeams },
  readModels: {
    project_directory: 'Projects as others may read them: id, organization_id, key, name.',
    project_key_directory: 'Every key a project has had (old keys keep resolving): key, organization_id, project_id.',
  },
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


  events: [
    ...crudEvents('project', 'A project'),
    ...crudEvents('project_member', 'A project member (direct membership)'),
    { name: 'project.imported', description: 'Work was imported into a project (POST …/import); data: {projectId, imported: {type: count}}. No event is sent per imported item.' },
  ],

  setup({ db, database, services, lists, writes, config, exportIdleSeconds, log }) {
    const access = createProjectAccess(db, createAccessGroups(db, { enabled: config.groupChecks, maxChecks: config.maxChecksPerGroup, concurrency: config.checkStatements }))
    services.provide(ProjectAccessRef, access)
    const exports = createExports({ db, databaseKind: database.kind, access, idleSeconds: exportIdleSeconds, atOnce: config.exportsAtOnce, log })
    const imports = createImports({ writes, access, atOnce: config.importsAtOnce, readSeconds: config.importReadSeconds })
    imports.register(memberImportSection(services.get(UserDirectoryRef)))
    services.provide(ProjectTransfersRef, { exportSection: exports.register, importSection: imports.register })
    const users = services.get(UserDirectoryRef)
    const teams = services.get(TeamDirectoryRef)
    return { projects: createProjects({ db, writes, access, teams }), grants: createGrants({ db, writes, lists, access, users, teams }), exports, imports }
  },
  routes: ({ http }, bound) => projectRoutes(http.v1, bound),
  tools: (_context, bound) => projectTools(bound),
})
