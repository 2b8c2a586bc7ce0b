/** Response models of the users plugin (the people models are auth's: its face exports them). */
import { t } from 'elysia'
import { UuidString } from '../../src/http/models'
export { Invitation, InviteInput, ManagedUser, PEOPLE_Q_MAX, Person, PersonPatch, UserIdentity } from '../auth/api'

export const Me = t.Object(
  {
    user: t.Object({
      id: t.String({ format: 'uuid' }),
      username: t.String(),
      displayName: t.String(),
      avatarUrl: t.Union([t.String(), t.Null()]),
      email: t.String(),
      role: t.Union([t.Literal('member'), t.Literal('administrator'), t.Literal('superadministrator')]),
    }),
    organization: t.Object({ id: UuidString(), name: t.String() }, { description: "The caller's organization." }),
    key: t.Union(
      [
        t.Object({
          id: t.String({ format: 'uuid' }),
          name: t.String(),
          prefix: t.String(),
          scopes: t.Array(t.String()),
          expiresAt: t.Union([t.String({ format: 'date-time' }), t.Null()]),
        }),
        t.Null(),
      ],
      { description: 'The API key in use; null when the caller uses an OAuth access token.' },
    ),
    grant: t.Optional(
      t.Object(
        { id: UuidString(), clientName: t.String(), scopes: t.Array(t.String()) },
        { description: 'With an OAuth access token: the connected app (grant) it belongs to and its scopes.' },
      ),
    ),
  },
  { title: 'Me' },
)

/** `me`, or a user's id: where a route or tool takes a user, `me` stands for the caller. */
export const UserRef = (description = 'A user id, or `me` for the caller.') => t.Union([UuidString(), t.Literal('me')], { description })

/** The status a people list shows: active (default), or for administrators deactivated or invited. */
export const PeopleStatus = () =>
  t.Union([t.Literal('active'), t.Literal('deactivated'), t.Literal('invited')], {
    description: 'active (default); deactivated and invited: administrators and superadministrators only (403 for anyone else).',
  })
