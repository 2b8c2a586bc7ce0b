/**
 * A plugin that exists only in tests: it exercises the core's envelope, validation, pagination
 * and error mapping through real routes, without depending on any resource plugin.
 */
import { Elysia, t } from 'elysia'
import { sql } from 'drizzle-orm'
import { Envelope, PageEnvelope, responses } from '../../src/http/envelope'
import { pageQuery, pageRequest, toPage } from '../../src/http/pagination'
import { definePlugin } from '../../src/plugin'
import { Integer } from '../../src/http/models'
import { created } from '../../src/http/answer'
import { queryText } from '../../src/db'

export const PROBE_ITEMS = Array.from({ length: 45 }, (_, index) => ({ n: index }))

const ProbeBody = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 10 }),
    count: t.Optional(Integer({ minimum: 0 })),
    points: t.Optional(t.Array(t.Object({ x: t.String(), y: t.Number() }, { additionalProperties: false }))),
  },
  { additionalProperties: false },
)

export const probePlugin = definePlugin({
  name: 'probe',
  description: 'Test-only routes for the core.',
  dependencies: ['auth'],
  scopes: [{ name: 'probe:read', description: 'Test scope.' }, { name: 'probe:write', description: 'Test scope.' }],
  routes: ({ http, db, writes }) =>
    new Elysia({ prefix: '/api/v1/probe' })
      .use(http.v1)
      .get('/items', ({ query }) => toPage(PROBE_ITEMS.slice((query.page ?? 0) * (query.size ?? 20), ((query.page ?? 0) + 1) * (query.size ?? 20)), pageRequest(query), PROBE_ITEMS.length), {
        scopes: ['probe:read'],
        query: t.Object(pageQuery()),
        response: responses(PageEnvelope(t.Object({ n: t.Integer() }))),
      })
      .post(
        '/items',
        ({ body }) => created(body),
        { scopes: ['probe:write'], body: ProbeBody, response: responses(Envelope(ProbeBody), { status: 201 }) },
      )
      // A change that commits, then an answer that never makes it (an error after the commit).
      .post(
        '/commit-then-fail',
        async ({ actor, body, idempotency }) => {
          await writes.change(actor, null, async ({ audit }) => {
            await audit({ action: 'probe.committed', resourceType: 'probe', resourceId: body.name })
            return created({ name: body.name })
          }, idempotency)
          throw new Error('the answer was lost after the commit')
        },
        { scopes: ['probe:write'], body: t.Object({ name: t.String() }), response: responses(Envelope(t.Object({ name: t.String() })), { status: 201 }) },
      )
      .get('/boom', () => {
        throw new Error('secret internals: password=hunter2 at /srv/app.ts:12')
      }, { scopes: [] })
      .get('/db-boom', async () => {
        await db.execute(sql`select * from no_such_table_with_secret_name`)
        return 'unreachable'
      }, { scopes: [] })
      // Unexpected database errors whose parameters must never reach the logs.
      .get('/db-secret', async () => {
        await queryText(db, 'select $1::int as n', ['probe-secret-parameter'])
        return 'unreachable'
      }, { scopes: [] })
      .get('/db-duplicate', async () => {
        const id = '00000000-0000-7000-8000-00000000feed'
        await queryText(db, 'insert into organizations (id, name) values ($1, $2) on conflict do nothing', [id, 'probe-secret-name'])
        await queryText(db, 'insert into organizations (id, name) values ($1, $2)', [id, 'probe-secret-name'])
        return 'unreachable'
      }, { scopes: [] })
      .get('/bad-response', () => ({ unexpected: 'shape' }) as any, { scopes: [], response: responses(Envelope(t.Object({ n: t.Integer() }))) }),
})
