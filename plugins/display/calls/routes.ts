/**
 * `POST /api/component`, the display API's hot path (update.ts), answered in the display API's
 * convention through the core's kit (src/http/display-api): JSON `{message, detail, field?}` as
 * documented in docs/display.md, not the v1 envelope.
 */
import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import { answerDoc, displayErrorDoc, displayJson, displayRoute, invalidApiKeyDoc, json, limitExceededDoc, refusalResponse, requireJson, usageHeaderDocs, usageHeaders, type DisplayKit } from '../../../src/http/display-api'
import { ComponentData, ComponentUpdate } from '../model'
import type { RecordDisplayCall } from './calls'
import type { ChangeNotifier } from './changes'
import type { CallGroups } from './groups'
import { updateComponent } from './update'

const ComponentUpdateBody = Type.Object(
  {
    ...ComponentUpdate.properties,
    componentId: Type.String({ description: 'The `id` of the component (API v1 `/pages/{pageId}/components`).' }),
    apiKey: Type.String({ description: 'Your display key, `dpk_…` (account area: Display account).' }),
    data: Type.Union(Object.values(ComponentData), { description: "The whole content; `type` must be the component's type." }),
  },
  { title: 'ComponentUpdate', additionalProperties: false },
)

/** The X-RateLimit-* headers of an answer to a display key known to be valid. */
const charged = usageHeaderDocs(true)

// Made for each app: displayRoute says why.
const componentUpdate = () =>
  displayRoute({
    summary: "Replace a component's content (display key in the body); counts one call of the key's daily limit.",
    description:
      'Every call with a valid key counts, whatever its outcome, except one refused with 429; every answer to a valid key carries the X-RateLimit-* headers. An update older than the stored `timestamp` is not applied (409); an equal or newer one is.',
    body: ComponentUpdateBody,
    responses: {
      200: answerDoc(
        'Applied; viewers of the live page see it at once.',
        json(Type.Object({ message: Type.Literal('updateSuccess'), limitRemaining: Type.Integer({ minimum: 0, description: 'Calls left today, after this one.' }) }, { additionalProperties: false })),
        charged,
      ),
      400: displayErrorDoc(
        "invalidRequest (not JSON, a missing, unknown or invalid field, or `data` taking more than display.maxComponentDataKilobytes as stored, numbers written out in full: `field` names it) or componentTypeMismatch (`data.type` is not the component's type). Counted, with the X-RateLimit-* headers, when the key is valid.",
        ['invalidRequest', 'componentTypeMismatch'],
        usageHeaderDocs(false),
      ),
      401: invalidApiKeyDoc,
      403: displayErrorDoc("readOnlyAccess: the key's user is a viewer of the page; only editors, its creator and administrators feed it (counted).", ['readOnlyAccess'], charged),
      404: displayErrorDoc("componentNotFound: no such component on a page the key's user can use (counted).", ['componentNotFound'], charged),
      409: displayErrorDoc(
        'staleUpdate: the component holds data with a later timestamp; not applied. componentBound: a work source feeds the component (PUT /api/v1/pages/{pageId}/components/{componentId}/source); delete it first. Both counted.',
        ['staleUpdate', 'componentBound'],
        charged,
      ),
      429: limitExceededDoc,
    },
  })

/** What `POST /api/component` uses, bound at setup. */
export interface ComponentRouteDeps {
  /** The display API kit of the plugin's routes. */
  kit: DisplayKit
  groups: CallGroups
  notifier: ChangeNotifier
  recordCall: RecordDisplayCall
  /** `display.maxComponentDataKilobytes`, in bytes. */
  maxComponentDataBytes: number
}

export function componentRoutes({ kit, groups, notifier, recordCall, maxComponentDataBytes }: ComponentRouteDeps) {
  // The handler checks the body with update.ts's compiled schemas and builds every answer itself,
  // so no Elysia body or response schema runs per request (`displayRoute` only documents). It
  // catches its own failures rather than going through `kit.handle`: it records every call's
  // outcome anyway, and the hot path pays for no wrapper (a promise and a context object per call).
  return new Elysia({ name: 'display-api' }).post(
    '/api/component',
    async ({ request, body, set, route }) => {
      const refused = requireJson(request, body)
      if (refused) {
        recordCall('component', 'invalidRequest')
        return refused
      }
      try {
        const outcome = await updateComponent(groups, body, maxComponentDataBytes)
        recordCall('component', outcome.ok ? 'ok' : outcome.error.message)
        if (!outcome.ok) return refusalResponse(outcome)
        notifier.changed(outcome.organizationId, outcome.pageId, outcome.componentId)
        const remaining = Math.max(0, outcome.usage.limit - outcome.usage.used)
        return displayJson(200, { message: 'updateSuccess', limitRemaining: remaining }, usageHeaders(outcome.usage, 200))
      } catch (error) {
        recordCall('component', 'failed')
        return kit.fail(error, { request, set, route })
      }
    },
    componentUpdate(),
  )
}
