/** MCP tools of the webhooks plugin: read only (management stays with REST and its audit). */
import { t } from 'elysia'
import { cursorParameter, pageArguments, pageRequest } from '../../src/http/pagination'
import { defineTool } from '../../src/plugin'
import type { WebhookService } from './service'

export function webhookTools(webhooks: WebhookService) {
  return [
    defineTool({
      name: 'list_webhooks',
      description: "The organization's webhooks (URL, events, project, enabled, last success, failing since), oldest first; administrators only. Continue with `cursor` from meta.nextCursor.",
      scopes: ['webhooks:read'],
      readOnly: true,
      input: t.Object({ ...pageArguments(), ...cursorParameter() }, { additionalProperties: false }),
      run: (actor, input) => webhooks.list(actor, pageRequest(input)),
    }),
  ]
}
