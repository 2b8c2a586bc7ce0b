/** MCP tools of the users plugin: the same bound service as the REST routes. */
import { t } from 'elysia'
import { cursorParameter, pageArguments, pageRequest } from '../../src/http/pagination'
import { defineTool } from '../../src/plugin'
import { InviteInput, UserRef } from './model'
import { peopleQuery } from './routes'
import type { UserService } from './service'

export function userTools(users: UserService) {
  // No request here: a link starts with server.publicUrl when configured, else it is a path of this service.
  const origin = users.publicUrl ?? ''
  return [
    defineTool({
      name: 'get_current_user',
      description: 'You: the key owner (id, username, display name, email, role), your organization, and the key in use. Needs no scope.',
      scopes: [],
      readOnly: true,
      input: t.Object({}, { additionalProperties: false }),
      run: (actor) => users.me(actor),
    }),
    defineTool({
      name: 'get_user',
      description:
        'Limited identity (id, username, display name, avatar) of an active user of your organization; `me` for yourself. Administrators see any user of the organization with email, role and status.',
      scopes: ['users:read'],
      readOnly: true,
      input: t.Object({ userId: UserRef() }, { additionalProperties: false }),
      run: (actor, input) => users.get(actor, input.userId),
    }),
    defineTool({
      name: 'list_users',
      description:
        'People of your organization by username: active users (limited identity); administrators also see email, role and status and may pass status deactivated or invited. `q` matches the start of a name. Continue with `cursor` from meta.nextCursor.',
      scopes: ['users:read'],
      readOnly: true,
      input: t.Object({ ...peopleQuery(), ...pageArguments(), ...cursorParameter() }, { additionalProperties: false }),
      run: (actor, input) => users.list(actor, { status: input.status, q: input.q }, pageRequest(input)),
    }),
    defineTool({
      name: 'invite_user',
      description:
        'Invite someone to your organization (administrators): `{email, username?, displayName?, role?: member|administrator}` makes an invited user and answers their one-time link to choose a password (7 days), shown this once.',
      scopes: ['users:write'],
      input: InviteInput,
      run: (actor, input) => users.invite(actor, input, origin),
    }),
    defineTool({
      name: 'update_user',
      description:
        "Change a user's `role` or `status` (active | deactivated) (administrators; only a superadministrator grants, removes or deactivates a superadministrator; never the last active one). Deactivation stops their keys and sessions at once.",
      scopes: ['users:write'],
      input: t.Object({ userId: UserRef(), role: t.Optional(t.Union([t.Literal('member'), t.Literal('administrator'), t.Literal('superadministrator')])), status: t.Optional(t.Union([t.Literal('active'), t.Literal('deactivated')])) }, { additionalProperties: false }),
      run: (actor, { userId, ...patch }) => users.update(actor, userId, patch),
    }),
  ]
}
