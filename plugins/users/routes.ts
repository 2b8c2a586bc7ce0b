/** API v1 routes of users: the caller, limited identity, and the people of the organization. */
import { Elysia, t } from 'elysia'
import { Envelope, PageEnvelope, responses } from '../../src/http/envelope'
import { cursorParameter, pageQuery, pageRequest } from '../../src/http/pagination'
import type { PluginContext } from '../../src/plugin'
import { linkOrigin } from '../auth/api'
import { Invitation, InviteInput, ManagedUser, Me, PEOPLE_Q_MAX, PeopleStatus, Person, PersonPatch } from './model'
import type { UserService } from './service'

const tags = ['Users']
const UserParams = t.Object({ userId: t.String({ description: 'A user id, or `me` for the caller.' }) })

/** The query of `GET /api/v1/users` (and the arguments of `list_users`) besides paging. */
export const peopleQuery = () => ({
  status: t.Optional(PeopleStatus()),
  q: t.Optional(
    t.String({
      maxLength: PEOPLE_Q_MAX,
      description: `Matches the start of a username or display name (administrators: or an email), case-insensitive; \`%\` and \`_\` match only themselves. At most ${PEOPLE_Q_MAX} characters.`,
    }),
  ),
})

export function userRoutes(context: PluginContext, users: UserService) {
  const origin = (request: Request) => linkOrigin(request, context.isSecureRequest(request), users.publicUrl)
  return new Elysia({ name: 'users', prefix: '/api/v1/users' })
    .use(context.http.v1)
    .get('', ({ actor, query }) => users.list(actor, { status: query.status, q: query.q }, pageRequest(query)), {
      scopes: ['users:read'],
      query: t.Object({ ...pageQuery(), ...cursorParameter(), ...peopleQuery() }),
      response: responses(PageEnvelope(Person)),
      detail: {
        tags,
        summary:
          'People of your organization, by username: active users with limited identity; administrators also see email, role and status and may list deactivated or invited users (403 for anyone else).',
      },
    })
    .post('', ({ actor, body, request, idempotency }) => users.invite(actor, body, origin(request), idempotency), {
      scopes: ['users:write'],
      body: InviteInput,
      response: responses(Envelope(Invitation), { status: 201, extra: [409, 422] }),
      detail: {
        tags,
        summary:
          'Invite someone (administrators): an invited user and their one-time link (7 days) to choose a password, shown this once. 409 names the taken field (email, username).',
      },
    })
    .get('/me', ({ actor }) => users.meAnswer(actor), {
      scopes: [],
      response: responses(Envelope(Me)),
      detail: { tags, summary: 'The key owner, their organization, and the key in use, or the connected app of an OAuth access token (no scope needed).' },
    })
    .get('/:userId', ({ actor, params }) => users.get(actor, params.userId), {
      scopes: ['users:read'],
      params: UserParams,
      response: responses(Envelope(Person)),
      detail: {
        tags,
        summary:
          'An active user of your organization (limited identity); others are 404. Administrators see any user of the organization (invited, deactivated) with email, role and status.',
      },
    })
    .patch('/:userId', ({ actor, params, body }) => users.update(actor, params.userId, body), {
      scopes: ['users:write'],
      params: UserParams,
      body: PersonPatch,
      response: responses(Envelope(ManagedUser), { extra: [409] }),
      detail: {
        tags,
        summary:
          "Change a user's role or status (administrators; only a superadministrator grants, removes or deactivates a superadministrator). Deactivation stops their keys and sessions at once. 409 for the last active superadministrator.",
      },
    })
    .post('/:userId/invite', ({ actor, params, request, idempotency }) => users.reissue(actor, params.userId, origin(request), idempotency), {
      scopes: ['users:write'],
      params: UserParams,
      response: responses(Envelope(Invitation), { status: 201, extra: [409, 422] }),
      detail: { tags, summary: 'A new invitation link for an invited user (administrators), shown this once; the previous link stops working. 409 for a user who is not invited.' },
    })
}
