/** The `users` plugin: `/api/v1/users/me` and limited identity of organization members. */
import { Elysia, t } from 'elysia'
import { Envelope, responses } from '../../src/http/envelope'
import { definePlugin } from '../../src/plugin'
import { UserDirectoryRef } from '../auth/api'
import { Me, UserIdentity } from './model'
import { createUsers } from './service'
import { userTools } from './tools'

export default definePlugin({
  name: 'users',
  description: 'The key owner (`/users/me`) and limited identity of active users of the organization.',
  dependencies: ['auth'],
  scopes: [{ name: 'users:read', description: 'Resolve limited user identity information.' }],
  tags: [{ name: 'Users', description: 'Limited identity of organization members.' }],

  setup: ({ db, services }) => ({ users: createUsers({ db, directory: services.get(UserDirectoryRef) }) }),
  tools: (_context, { users }) => userTools(users),
  routes: ({ http }, { users }) =>
    new Elysia({ name: 'users', prefix: '/api/v1/users' })
      .use(http.v1)
      .get('/me', ({ actor }) => users.me(actor), {
        scopes: [],
        response: responses(Envelope(Me)),
        detail: { tags: ['Users'], summary: 'The key owner and the key in use (no scope needed).' },
      })
      .get('/:userId', ({ actor, params }) => users.get(actor, params.userId), {
        scopes: ['users:read'],
        params: t.Object({ userId: t.String() }),
        response: responses(Envelope(UserIdentity)),
        detail: { tags: ['Users'], summary: 'An active user of your organization (limited identity); others are 404.' },
      }),
})
