/** API v1 routes of labels over the bound label service. */
import { Elysia, t } from 'elysia'
import { ifMatchHeader } from '../../src/http/answer'
import { Envelope, PageEnvelope, responses } from '../../src/http/envelope'
import { Deleted } from '../../src/http/models'
import { cursorParameter, pageQuery, pageRequest } from '../../src/http/pagination'
import type { V1Kit } from '../../src/http/v1'
import { Label, LabelInput, LabelPatch } from './model'
import type { LabelService } from './service'

const tags = ['Labels']
const LabelParams = t.Object({ labelId: t.String() })
const IfMatch = ifMatchHeader('label')

export function labelRoutes(v1: V1Kit, labels: LabelService) {
  return new Elysia({ name: 'labels', prefix: '/api/v1/labels' })
    .use(v1)
    .get('', ({ actor, query }) => labels.list(actor, pageRequest(query)), {
      scopes: ['labels:read'],
      query: t.Object({ ...pageQuery(), ...cursorParameter() }),
      response: responses(PageEnvelope(Label)),
      detail: { tags, summary: "The organization's labels, by name." },
    })
    .post('', ({ actor, body, idempotency }) => labels.create(actor, body, idempotency), {
      scopes: ['labels:write'],
      body: LabelInput,
      response: responses(Envelope(Label), { status: 201, extra: [409, 422] }),
      detail: { tags, summary: 'Create a label (administrators). 409 names the existing label on a duplicate name.' },
    })
    .get('/:labelId', ({ actor, params }) => labels.get(actor, params.labelId), {
      scopes: ['labels:read'],
      params: LabelParams,
      response: responses(Envelope(Label)),
      detail: { tags, summary: 'A label.' },
    })
    .patch('/:labelId', ({ actor, params, body, headers }) => labels.update(actor, params.labelId, body, headers['if-match']), {
      scopes: ['labels:write'],
      params: LabelParams,
      headers: IfMatch,
      body: LabelPatch,
      response: responses(Envelope(Label), { extra: [409] }),
      detail: { tags, summary: 'Rename or recolor a label (administrators); every work item carrying it shows the change.' },
    })
    .delete('/:labelId', ({ actor, params, headers }) => labels.delete(actor, params.labelId, headers['if-match']), {
      scopes: ['labels:write'],
      params: LabelParams,
      headers: IfMatch,
      response: responses(Envelope(Deleted), { extra: [409] }),
      detail: { tags, summary: 'Delete a label (administrators); the work items that carried it stay, without it.' },
    })
}
