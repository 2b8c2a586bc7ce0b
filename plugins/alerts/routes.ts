/** API v1 routes of alert rules: `/api/v1/pages/{pageId}/components/{componentId}/alerts…` (`dashboards:read` / `:write`). */
import { Elysia, t } from 'elysia'
import { Envelope, PageEnvelope, responses } from '../../src/http/envelope'
import { Deleted } from '../../src/http/models'
import { cursorParameter, pageQuery, pageRequest } from '../../src/http/pagination'
import type { V1Kit } from '../../src/http/v1'
import { Alert, AlertInput, AlertPatch, AlertTransition } from './model'
import type { AlertService } from './service'

const tags = ['Alerts']
const ComponentParams = t.Object({ pageId: t.String(), componentId: t.String() })
const AlertParams = t.Object({ pageId: t.String(), componentId: t.String(), alertId: t.String() })

export function alertRoutes(v1: V1Kit, alerts: AlertService) {
  return new Elysia({ name: 'alerts', prefix: '/api/v1/pages/:pageId/components/:componentId/alerts' })
    .use(v1)
    .get('', ({ actor, params, query }) => alerts.list(actor, params.pageId, params.componentId, pageRequest(query)), {
      scopes: ['dashboards:read'],
      params: ComponentParams,
      query: t.Object({ ...pageQuery(), ...cursorParameter() }),
      response: responses(PageEnvelope(Alert)),
      detail: { tags, operationId: 'listComponentAlerts', summary: "A component's alert rules, oldest first (anyone who can see the page)." },
    })
    .post('', ({ actor, params, body, idempotency }) => alerts.create(actor, params.pageId, params.componentId, body, idempotency), {
      scopes: ['dashboards:write'],
      params: ComponentParams,
      body: AlertInput,
      response: responses(Envelope(Alert), { status: 201, extra: [409, 422] }),
      detail: {
        tags,
        operationId: 'createComponentAlert',
        summary:
          "Add a rule (the page's editors): `{when: \"above\"|\"below\", value, forSeconds?}` fires once the value has been above / below `value` for `forSeconds` (0..86400, default 0), `{when: \"noData\", forSeconds}` once the data is older than `forSeconds` (60..604800). 409 past alerts.maxAlertsPerComponent (20) or alerts.maxAlertsPerOrganization (1000).",
      },
    })
    .get('/:alertId', ({ actor, params }) => alerts.get(actor, params.pageId, params.componentId, params.alertId), {
      scopes: ['dashboards:read'],
      params: AlertParams,
      response: responses(Envelope(Alert)),
      detail: { tags, operationId: 'getComponentAlert', summary: 'One alert rule of the component, with its state.' },
    })
    .patch('/:alertId', ({ actor, params, body }) => alerts.update(actor, params.pageId, params.componentId, params.alertId, body), {
      scopes: ['dashboards:write'],
      params: AlertParams,
      body: AlertPatch,
      response: responses(Envelope(Alert)),
      detail: { tags, operationId: 'updateComponentAlert', summary: "Change a rule (the page's editors); its timer starts again. Switching to noData drops the value." },
    })
    .delete('/:alertId', ({ actor, params }) => alerts.delete(actor, params.pageId, params.componentId, params.alertId), {
      scopes: ['dashboards:write'],
      params: AlertParams,
      response: responses(Envelope(Deleted)),
      detail: { tags, operationId: 'deleteComponentAlert', summary: "Delete a rule and its history (the page's editors)." },
    })
    .get('/:alertId/history', ({ actor, params, query }) => alerts.history(actor, params.pageId, params.componentId, params.alertId, pageRequest(query)), {
      scopes: ['dashboards:read'],
      params: AlertParams,
      query: t.Object({ ...pageQuery(), ...cursorParameter() }),
      response: responses(PageEnvelope(AlertTransition)),
      detail: { tags, operationId: 'listComponentAlertHistory', summary: "The rule's transitions, one per fired or resolved, oldest first." },
    })
}
