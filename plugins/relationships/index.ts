/** The `relationships` plugin: typed links between work items of a project. */
import { Elysia, t } from 'elysia'
import { Envelope, PageEnvelope, responses } from '../../src/http/envelope'
import { Deleted } from '../../src/http/models'
import { pageRequest } from '../../src/http/pagination'
import { definePlugin } from '../../src/plugin'
import { relationshipTools } from './tools'
import { ProjectAccessRef } from '../projects/api'
import { Relationship, RelationshipInput, RelationshipPatch, RelationshipQuery } from './model'
import { relationships } from './schema'
import * as Relationships from './service'

const tags = ['Relationships']
const Params = t.Object({ projectId: t.String(), relationshipId: t.String() })

export default definePlugin({
  name: 'relationships',
  description: 'Typed links (blocks, relates_to, duplicates, parent_of) between work items of one project.',
  dependencies: ['auth', 'projects', 'work-items'],
  tables: { relationships },
  scopes: [
    { name: 'relationships:read', description: 'Read relationships.' },
    { name: 'relationships:write', description: 'Create, change and delete relationships (editors).' },
  ],
  tags: [{ name: 'Relationships', description: 'Both ends in the project, no self links, no duplicates. Viewer reads, editor writes.' }],
  tools: relationshipTools,

  routes: ({ db, http, services }) => {
    const access = services.get(ProjectAccessRef)
    return new Elysia({ name: 'relationships', prefix: '/api/v1/projects/:projectId/relationships' })
      .use(http.v1)
      .get('', ({ actor, params, query }) => Relationships.listRelationships(db, access, actor, params.projectId, query, pageRequest(query)), {
        scopes: ['relationships:read'],
        params: t.Object({ projectId: t.String() }),
        query: RelationshipQuery,
        response: responses(PageEnvelope(Relationship)),
        detail: { tags, summary: 'Relationships of a project, oldest first; `workItemId` matches either end (viewer).' },
      })
      .post(
        '',
        async ({ actor, params, body, set }) => {
          set.status = 201
          return Relationships.createRelationship(db, access, actor, params.projectId, body)
        },
        {
          scopes: ['relationships:write'],
          params: t.Object({ projectId: t.String() }),
          body: RelationshipInput,
          response: responses(Envelope(Relationship), { status: 201, extra: [409, 422] }),
          detail: { tags, summary: 'Link two work items of the project (editor); a duplicate is 409 naming the existing link.' },
        },
      )
      .get('/:relationshipId', async ({ actor, params }) => Relationships.serializeRelationship(await Relationships.getRelationship(db, access, actor, params.projectId, params.relationshipId)), {
        scopes: ['relationships:read'],
        params: Params,
        response: responses(Envelope(Relationship)),
        detail: { tags, summary: 'A relationship (viewer).' },
      })
      .patch(
        '/:relationshipId',
        async ({ actor, params, body }) =>
          Relationships.serializeRelationship(await Relationships.updateRelationship(db, access, actor, params.projectId, params.relationshipId, body.type)),
        {
          scopes: ['relationships:write'],
          params: Params,
          body: RelationshipPatch,
          response: responses(Envelope(Relationship), { extra: [409] }),
          detail: { tags, summary: "Change a relationship's type (editor)." },
        },
      )
      .delete('/:relationshipId', ({ actor, params }) => Relationships.deleteRelationship(db, access, actor, params.projectId, params.relationshipId), {
        scopes: ['relationships:write'],
        params: Params,
        response: responses(Envelope(Deleted)),
        detail: { tags, summary: 'Delete a relationship (editor).' },
      })
  },
})
