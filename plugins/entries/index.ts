/** The `entries` plugin: comments, notes and logs on work items. */
import { Elysia, t } from 'elysia'
import { Envelope, PageEnvelope, responses } from '../../src/http/envelope'
import { etagOf, ifMatchHeader } from '../../src/http/etag'
import { Deleted } from '../../src/http/models'
import { pageQuery, pageRequest } from '../../src/http/pagination'
import { definePlugin } from '../../src/plugin'
import { entryTools } from './tools'
import { ProjectAccessRef } from '../projects/api'
import { Entry, EntryInput, EntryPatch } from './model'
import { entries } from './schema'
import * as Entries from './service'

const tags = ['Entries']
const EntryParams = t.Object({ workItemId: t.String(), entryId: t.String() })
const IfMatch = ifMatchHeader('entry')

export default definePlugin({
  name: 'entries',
  description: "Entries of work items, access-checked through the work item's project.",
  dependencies: ['auth', 'projects', 'work-items'],
  tables: { entries },
  scopes: [
    { name: 'entries:read', description: 'Read entries.' },
    { name: 'entries:write', description: 'Create entries; edit or delete your own (or any, as a project owner).' },
  ],
  tags: [{ name: 'Entries', description: "Checked through the work item's project: viewer reads, editor writes; only the author or an owner edits or deletes." }],
  tools: entryTools,

  routes: ({ db, http, services }) => {
    const access = services.get(ProjectAccessRef)
    return new Elysia({ name: 'entries', prefix: '/api/v1/work-items/:workItemId/entries' })
      .use(http.v1)
      .get('', ({ actor, params, query }) => Entries.listEntries(db, access, actor, params.workItemId, pageRequest(query)), {
        scopes: ['entries:read'],
        params: t.Object({ workItemId: t.String() }),
        query: t.Object(pageQuery()),
        response: responses(PageEnvelope(Entry)),
        detail: { tags, summary: 'Entries of a work item in content order (viewer).' },
      })
      .post(
        '',
        async ({ actor, params, body, set }) => {
          set.status = 201
          const entry = await Entries.createEntry(db, access, actor, params.workItemId, body)
          set.headers.etag = etagOf(entry.updatedAt)
          return entry
        },
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
        async ({ actor, params, set }) => {
          const row = await Entries.getEntry(db, access, actor, params.workItemId, params.entryId)
          set.headers.etag = etagOf(row.updatedAt)
          return Entries.serializeEntry(row)
        },
        { scopes: ['entries:read'], params: EntryParams, response: responses(Envelope(Entry)), detail: { tags, summary: 'An entry (viewer).' } },
      )
      .patch(
        '/:entryId',
        async ({ actor, params, body, headers, set }) => {
          const row = await Entries.updateEntry(db, access, actor, params.workItemId, params.entryId, body, headers['if-match'])
          set.headers.etag = etagOf(row.updatedAt)
          return Entries.serializeEntry(row)
        },
        {
          scopes: ['entries:write'],
          params: EntryParams,
          headers: IfMatch,
          body: EntryPatch,
          response: responses(Envelope(Entry), { extra: [409] }),
          detail: { tags, summary: 'Edit an entry (editor, and its author or a project owner).' },
        },
      )
      .delete('/:entryId', ({ actor, params, headers }) => Entries.deleteEntry(db, access, actor, params.workItemId, params.entryId, headers['if-match']), {
        scopes: ['entries:write'],
        params: EntryParams,
        headers: IfMatch,
        response: responses(Envelope(Deleted), { extra: [409] }),
        detail: { tags, summary: 'Delete an entry (editor, and its author or a project owner).' },
      })
  },
})
