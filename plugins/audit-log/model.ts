/** Models of audit records and their filters. */
import { t } from 'elysia'
import { Timestamp, UuidString } from '../../src/http/models'
import { cursorParameter, pageQuery } from '../../src/http/pagination'

export const AuditRecord = t.Object(
  {
    id: UuidString(),
    occurredAt: Timestamp(),
    actorUserId: t.Union([UuidString(), t.Null()], { description: 'Null for the operator CLI.' }),
    apiKeyId: t.Union([UuidString(), t.Null()], { description: 'The key used, when the change came through API v1 or MCP.' }),
    grantId: t.Union([UuidString(), t.Null()], { description: 'The OAuth grant (a connected app) whose access token made the change, through API v1 (`via: "oauth"`) or MCP.' }),
    via: t.Union([t.Literal('rest'), t.Literal('oauth'), t.Literal('mcp'), t.Literal('account'), t.Literal('cli'), t.Literal('display'), t.Literal('system')], { description: '`oauth`: API v1 with an OAuth access token; `system`: done by the service itself (e.g. a webhook disabled after failing for a day).' }),
    action: t.String({ description: 'e.g. `team.created`, `project.member_added`.' }),
    resourceType: t.String(),
    resourceId: t.String(),
    projectId: t.Union([UuidString(), t.Null()]),
    changes: t.Union([
      t.Object({ before: t.Optional(t.Record(t.String(), t.Unknown())), after: t.Optional(t.Record(t.String(), t.Unknown())) }),
      t.Null(),
    ]),
    requestId: t.Union([t.String(), t.Null()]),
  },
  { title: 'AuditRecord' },
)

export const AuditQuery = t.Object({
  ...pageQuery(),
  ...cursorParameter(),
  action: t.Optional(t.String({ minLength: 1, maxLength: 100, description: 'Exact action, or a prefix ending in `.*` (e.g. `project.*`).' })),
  actorId: t.Optional(UuidString({ description: 'Only changes made by this user.' })),
  since: t.Optional(t.String({ format: 'date-time', description: 'Inclusive lower bound (ISO 8601).' })),
  until: t.Optional(t.String({ format: 'date-time', description: 'Exclusive upper bound (ISO 8601).' })),
})
export type AuditQuery = typeof AuditQuery.static
