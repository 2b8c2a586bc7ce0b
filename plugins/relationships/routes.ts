/** API v1 routes of relationships over the bound relationship service. */
import { Elysia, t } from 'elysia'
import { Envelope, PageEnvelope, responses } from '../../src/http/envelope'
import { Deleted } from '../../src/http/models'
import { pageRequest } from '../../src/http/pagination'
import type { V1Kit } from '../../src/http/v1'
import { Relationship, RelationshipInput, RelationshipPatch, RelationshipQuery } from './model'
import type { RelationshipService } from './service'

const tags = ['Relationships']
const Params = t.Object({ projectId: t.String(), relationshipId: t.String() })

export function relationshipRoutes(v1: V1Kit, relationships: RelationshipService) {
    return new Elysia({ name: 'relationships', prefix: '/api/v1/projects/:projectId/relationships' })
      .use(v1)
      .get('', ({ actor, params, query }) => relationships.list(actor, params.projectId, query, pageRequest(query)), {
        scopes: ['relationships:read'],
        params: t.Object({ projectId: t.String() }),
        query: RelationshipQuery,
        response: responses(PageEnvelope(Relationship)),
        detail: { tags, summary: 'Relationships of a project, oldest first unless `sort` says otherwise; `workItemId` matches either end, `type` any of; by `page` or `cursor` (viewer).' },
      })
      .post(
        '',
        ({ actor, params, body, idempotency }) => relationships.create(actor, params.projectId, body, idempotency),
        {
          scopes: ['relationships:write'],
          params: t.Object({ projectId: t.String() }),
          body: RelationshipInput,
          response: responses(Envelope(Relationship), { status: 201, extra: [409, 422] }),
          detail: { tags, summary: 'Link two work items of the project (editor); a duplicate is 409 naming the existing link.' },
        },
      )
      .get('/:relationshipId', ({ actor, params }) => relationships.get(actor, params.projectId, params.relationshipId), {
        scopes: ['relationships:read'],
        params: Params,
        response: responses(Envelope(Relationship)),
        detail: { tags, summary: 'A relationship (viewer).' },
      })
      .patch(
        '/:relationshipId',
        ({ actor, params, body }) => relationships.update(actor, params.projectId, params.relationshipId, body.type),
        {
          scopes: ['relationships:write'],
          params: Params,
          body: RelationshipPatch,
          response: responses(Envelope(Relationship), { extra: [409] }),
          detail: { tags, summary: "Change a relationship's type (editor)." },
        },
      )
      .delete('/:relationshipId', ({ actor, params }) => relationships.delete(actor, params.projectId, params.relationshipId), {
        scopes: ['relationships:write'],
        params: Params,
        response: responses(Envelope(Deleted)),
        detail: { tags, summary: 'Delete a relationship (editor).' },
      })
}
