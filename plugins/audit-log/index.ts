/** The `audit-log` plugin: reading the audit records the core writes with every change. */
import { Elysia, t } from 'elysia'
import { PageEnvelope, responses } from '../../src/http/envelope'
import { pageRequest } from '../../src/http/pagination'
import { definePlugin } from '../../src/plugin'
import { auditTools } from './tools'
import { ProjectAccessRef } from '../projects/api'
import { AuditQuery, AuditRecord } from './model'
import { listAuditLog, listProjectAuditLog } from './service'

const tags = ['Audit log']

export default definePlugin({
  name: 'audit-log',
  description: 'Organization-wide and per-project audit logs for administrators.',
  dependencies: ['auth', 'projects'],
  scopes: [{ name: 'audit_logs:read', description: 'Read audit logs (administrators).' }],
  tags: [{ name: 'Audit log', description: 'Every change through any door, newest first. Administrators and superadministrators only.' }],
  tools: auditTools,

  routes: ({ db, http, services }) => {
    const access = services.get(ProjectAccessRef)
    return new Elysia({ name: 'audit-log', prefix: '/api/v1' })
      .use(http.v1)
      .get('/audit-logs', ({ actor, query }) => listAuditLog(db, access, actor, query, pageRequest(query)), {
        scopes: ['audit_logs:read'],
        query: AuditQuery,
        response: responses(PageEnvelope(AuditRecord)),
        detail: { tags, summary: "Your organization's audit log, newest first (administrators)." },
      })
      .get('/projects/:projectId/audit-logs', ({ actor, params, query }) => listProjectAuditLog(db, access, actor, params.projectId, query, pageRequest(query)), {
        scopes: ['audit_logs:read'],
        params: t.Object({ projectId: t.String() }),
        query: AuditQuery,
        response: responses(PageEnvelope(AuditRecord)),
        detail: { tags, summary: "A project's audit log (administrators who can see the project; 404 otherwise)." },
      })
  },
})
