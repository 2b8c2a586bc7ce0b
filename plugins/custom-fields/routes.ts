/** API v1 routes of custom field definitions and of the fields enabled per project. */
import { Elysia, t } from 'elysia'
import { ifMatchHeader } from '../../src/http/answer'
import { Envelope, PageEnvelope, responses } from '../../src/http/envelope'
import { Deleted } from '../../src/http/models'
import { cursorParameter, pageQuery, pageRequest } from '../../src/http/pagination'
import type { V1Kit } from '../../src/http/v1'
import { CustomField, CustomFieldInput, CustomFieldPatch, ProjectFieldInput } from './model'
import type { CustomFieldService } from './service'

const tags = ['Custom fields']
const FieldParams = t.Object({ fieldId: t.String() })
const IfMatch = ifMatchHeader('custom field')
const Paging = t.Object({ ...pageQuery(), ...cursorParameter() })

export function customFieldRoutes(v1: V1Kit, fields: CustomFieldService) {
  return new Elysia({ name: 'custom-fields' })
    .use(v1)
    .get('/api/v1/custom-fields', ({ actor, query }) => fields.list(actor, pageRequest(query)), {
      scopes: ['custom_fields:read'],
      query: Paging,
      response: responses(PageEnvelope(CustomField)),
      detail: { tags, summary: "The organization's custom field definitions, by key." },
    })
    .post('/api/v1/custom-fields', ({ actor, body, idempotency }) => fields.create(actor, body, idempotency), {
      scopes: ['custom_fields:write'],
      body: CustomFieldInput,
      response: responses(Envelope(CustomField), { status: 201, extra: [409, 422] }),
      detail: { tags, summary: 'Define a custom field (administrators); projects enable it to use it. 409 names the existing field on a duplicate key.' },
    })
    .get('/api/v1/custom-fields/:fieldId', ({ actor, params }) => fields.get(actor, params.fieldId), {
      scopes: ['custom_fields:read'],
      params: FieldParams,
      response: responses(Envelope(CustomField)),
      detail: { tags, summary: 'A custom field definition.' },
    })
    .patch('/api/v1/custom-fields/:fieldId', ({ actor, params, body, headers }) => fields.update(actor, params.fieldId, body, headers['if-match']), {
      scopes: ['custom_fields:write'],
      params: FieldParams,
      headers: IfMatch,
      body: CustomFieldPatch,
      response: responses(Envelope(CustomField), { extra: [409] }),
      detail: { tags, summary: 'Rename a field, change its options (ids kept) or `required` (administrators); the key and type never change.' },
    })
    .delete('/api/v1/custom-fields/:fieldId', ({ actor, params, headers }) => fields.delete(actor, params.fieldId, headers['if-match']), {
      scopes: ['custom_fields:write'],
      params: FieldParams,
      headers: IfMatch,
      response: responses(Envelope(Deleted), { extra: [409] }),
      detail: { tags, summary: 'Delete a custom field (administrators) with every value of it.' },
    })
    .get('/api/v1/projects/:projectId/custom-fields', ({ actor, params, query }) => fields.projectFields(actor, params.projectId, pageRequest(query)), {
      scopes: ['custom_fields:read'],
      params: t.Object({ projectId: t.String() }),
      query: Paging,
      response: responses(PageEnvelope(CustomField)),
      detail: { tags, summary: "The custom fields enabled for a project (viewer): its work items' `fields`." },
    })
    .post('/api/v1/projects/:projectId/custom-fields', ({ actor, params, body }) => fields.enable(actor, params.projectId, body.fieldId), {
      scopes: ['custom_fields:write'],
      params: t.Object({ projectId: t.String() }),
      body: ProjectFieldInput,
      response: responses(Envelope(CustomField), { status: 201 }),
      detail: { tags, summary: 'Enable a custom field for a project (owner).' },
    })
    .delete('/api/v1/projects/:projectId/custom-fields/:fieldId', ({ actor, params }) => fields.disable(actor, params.projectId, params.fieldId), {
      scopes: ['custom_fields:write'],
      params: t.Object({ projectId: t.String(), fieldId: t.String() }),
      response: responses(Envelope(Deleted)),
      detail: { tags, summary: "Disable a custom field for a project (owner): its values on the project's work items are removed." },
    })
}
