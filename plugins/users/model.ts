/** Response models of the users plugin. */
import { t } from 'elysia'
export { UserIdentity } from '../auth/api'

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
    key: t.Object({
      id: t.String({ format: 'uuid' }),
      name: t.String(),
      prefix: t.String(),
      scopes: t.Array(t.String()),
      expiresAt: t.Union([t.String({ format: 'date-time' }), t.Null()]),
    }),
  },
  { title: 'Me' },
)
