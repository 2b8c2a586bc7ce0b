/** The `users` plugin: `/api/v1/users/me`, limited identity of organization members, and the people of the organization. */
import { definePlugin, type PluginContext } from '../../src/plugin'
import { PeopleRef, UserDirectoryRef } from '../auth/api'
import { userRoutes } from './routes'
import { createUsers } from './service'
import { userTools } from './tools'

/** `server.publicUrl`, when the core hands it to plugins (the origin of invitation links). */
const publicUrlOf = (context: PluginContext) => context.publicUrl || undefined

export default definePlugin({
  name: 'users',
  description: 'The key owner (`/users/me`), limited identity of active users of the organization, and people: the list, invitations, roles and deactivation.',
  dependencies: ['auth'],
  scopes: [
    { name: 'users:read', description: 'Resolve limited user identity information and list the people of the organization.' },
    { name: 'users:write', description: 'Invite users and change their role or status (administrators).', administratorsOnly: true },
  ],
  tags: [{ name: 'Users', description: 'Organization members: limited identity for everyone; invitations, roles and status for administrators.' }],

  setup: (context) =>
    ({ users: createUsers({ db: context.db, directory: context.services.get(UserDirectoryRef), people: context.services.get(PeopleRef), publicUrl: publicUrlOf(context) }) }),
  tools: (_context, { users }) => userTools(users),
  routes: (context, { users }) => userRoutes(context, users),
})
