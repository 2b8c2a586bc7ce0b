/** The `audit-log` plugin: reading the audit records the core writes with every change. */
import { Elysia, t } from 'elysia'
import { PageEnvelope, responses } from '../../src/http/envelope'
import { pageRequest } from '../../src/http/pagination'
import { definePlugin } from '../../src/plugin'
import { ProjectAccessRef } from '../projects/api'
import { AuditQuery, AuditRecord } from './model'
import { createAuditLog } from './service'
import { auditTools } from './tools'

const tags = ['Audit log']

export default definePlugin({
  name: 'audit-log',
  description: 'Organization-wide and per-project audit logs for administrators.',
  dependencies: ['auth', 'projects'],
  scopes: [{ name: 'audit_logs:read', description: 'Read audit logs (administrators).', administratorsOnly: true }],
  tags: [{ name: 'Audit log', description: 'Every change through any door, newest first. Administrators and superadministrators only.' }],

  setup: ({ db, services }) => ({ auditLog: createAuditLog({ db, access: services.get(ProjectAccessRef) }) }),
  tools: (_context, { auditLog }) => auditTools(auditLog),
  routes: ({ http }, { auditLog }) =>
    new Elysia({ name: 'audit-log', prefix: '/api/v1' })
      .use(http.v1)
      .get('/audit-logs', ({ actor, query }) => auditLog.organization(actor, query, pageRequest(query)), {
        scopes: ['audit_logs:read'],
        query: AuditQuery,
        response: responses(PageEnvelope(AuditRecord)),
        detail: { tags, summary: "Your organization's audit log, newest first (administrators): organization records and those of projects you can see." },
      })
      .get('/projects/:projectId/audit-logs', ({ actor, params, query }) => auditLog.project(actor, params.projectId, query, pageRequest(query)), {
        scopes: ['audit_logs:read'],
        params: t.Object({ projectId: t.String() }),
        query: AuditQuery,
        response: responses(PageEnvelope(AuditRecord)),
        detail: { tags, summary: "A project's audit log (administrators who can see the project; 404 otherwise)." },
      }),
})
