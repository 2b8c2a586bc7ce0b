/** MCP tool of the audit-log plugin: the organization's audit log (administrators). */
import { t } from 'elysia'
import { UuidString } from '../../src/http/models'
import { cursorParameter, pageArguments, pageRequest } from '../../src/http/pagination'
import { defineTool } from '../../src/plugin'
import type { AuditLogService } from './service'

export function auditTools(auditLog: AuditLogService) {
  return [
    defineTool({
      name: 'list_audit_logs',
      description: "The audit log, newest first (administrators). With `projectId`: that project's log (it must be visible to you).",
      scopes: ['audit_logs:read'],
      readOnly: true,
      input: t.Object(
        {
          projectId: t.Optional(UuidString()),
          ...pageArguments(),
          ...cursorParameter(),
          action: t.Optional(t.String({ minLength: 1, maxLength: 100, description: 'Exact action, or a prefix ending in `.*`.' })),
          actorId: t.Optional(UuidString()),
          since: t.Optional(t.String({ format: 'date-time' })),
          until: t.Optional(t.String({ format: 'date-time' })),
        },
        { additionalProperties: false },
      ),
      run: (actor, { projectId, ...query }) =>
        projectId ? auditLog.project(actor, projectId, query, pageRequest(query)) : auditLog.organization(actor, query, pageRequest(query)),
    }),
  ]
}
