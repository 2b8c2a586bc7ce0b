/** MCP tool of the users plugin: limited identity of an organization member. */
import { t } from 'elysia'
import { UuidString } from '../../src/http/models'
import { defineTool } from '../../src/plugin'
import type { UserService } from './service'

export function userTools(users: UserService) {
  return [
    defineTool({
      name: 'get_user',
      description: 'Limited identity (id, username, display name, avatar) of an active user of your organization.',
      scopes: ['users:read'],
      readOnly: true,
      input: t.Object({ userId: UuidString() }, { additionalProperties: false }),
      run: (actor, input) => users.get(actor, input.userId),
    }),
  ]
}
