/** API v1 routes of entries over the bound entry service. */
import { Elysia, t } from 'elysia'
import { Envelope, PageEnvelope, responses } from '../../src/http/envelope'
import { ifMatchHeader } from '../../src/http/answer'
import { Deleted } from '../../src/http/models'
import { pageRequest } from '../../src/http/pagination'
import type { V1Kit } from '../../src/http/v1'
import { Entry, EntryInput, EntryPatch, EntryQuery } from './model'
import type { EntryService } from './service'

const tags = ['Entries']
const EntryParams = t.Object({ workItemId: t.String(), entryId: t.String() })
const IfMatch = ifMatchHeader('entry')

export function entryRoutes(v1: V1Kit, entries: EntryService) {
    return new Elysia({ name: 'entries', prefix: '/api/v1/work-items/:workItemId/entries' })
      .use(v1)
      .get('', ({ actor, params, query }) => entries.list(actor, params.workItemId, query, pageRequest(query)), {
        scopes: ['entries:read'],
        params: t.Object({ workItemId: t.String() }),
        query: EntryQuery,
        response: responses(PageEnvelope(Entry)),
        detail: { tags, summary: 'Entries of a work item in content order unless `sort` says otherwise, filtered by kind, author and dates; by `page` or `cursor` (viewer).' },
      })
      .post(
        '',
        ({ actor, params, body, idempotency }) => entries.create(actor, params.workItemId, body, idempotency),
        {
          scopes: ['entries:write'],
          params: t.Object({ workItemId: t.String() }),
          body: EntryInput,
          response: responses(Envelope(Entry), { status: 201, extra: [409, 422] }),
          detail: { tags, summary: 'Add an entry (editor); `kind` defaults to `comment`.' },
        },
      )
      .get(
        '/:entryId',
        ({ actor, params }) => entries.get(actor, params.workItemId, params.entryId),
        { scopes: ['entries:read'], params: EntryParams, response: responses(Envelope(Entry)), detail: { tags, summary: 'An entry (viewer).' } },
      )
      .patch(
        '/:entryId',
        ({ actor, params, body, headers }) => entries.update(actor, params.workItemId, params.entryId, body, headers['if-match']),
        {
          scopes: ['entries:write'],
          params: EntryParams,
          headers: IfMatch,
          body: EntryPatch,
          response: responses(Envelope(Entry), { extra: [409] }),
          detail: { tags, summary: 'Edit an entry (editor, and its author or a project owner).' },
        },
      )
      .delete('/:entryId', ({ actor, params, headers }) => entries.delete(actor, params.workItemId, params.entryId, headers['if-match']), {
        scopes: ['entries:write'],
        params: EntryParams,
        headers: IfMatch,
        response: responses(Envelope(Deleted), { extra: [409] }),
        detail: { tags, summary: 'Delete an entry (editor, and its author or a project owner).' },
      })
}
