/** API v1 route of the list of work items across the projects the caller can view (across.ts). */
import { Elysia } from 'elysia'
import { PageEnvelope, responses } from '../../src/http/envelope'
import { pageRequest } from '../../src/http/pagination'
import type { V1Kit } from '../../src/http/v1'
import { ACROSS_PROJECTS_MAX, type WorkItemModels } from './model'
import type { WorkItemService } from './service'

export function acrossRoutes(v1: V1Kit, workItems: WorkItemService, models: WorkItemModels) {
  // Its own instance name: the work item routes by id or key share the prefix.
  return new Elysia({ name: 'work-items-across', prefix: '/api/v1/work-items' })
    .use(v1)
    .get('', ({ actor, query }) => workItems.across(actor, query, pageRequest(query)), {
      scopes: ['work_items:read'],
      query: models.acrossQuery,
      response: responses(PageEnvelope(models.item)),
      detail: {
        tags: ['Work items'],
        summary: 'Work items of every project you can view, the most recently changed first (or `sort`), filtered.',
        description: `The project list's filters, sorts and cursors over every project you can view (as a member, through a team, or every project of the organization as a superadministrator), and \`projectId\`: any of up to ${ACROSS_PROJECTS_MAX} project ids, comma-separated; an id you cannot view (or that does not exist) matches nothing. Default order: \`-updatedAt\` (positions are per project). \`me\` stands for you in \`assigneeId\`.`,
      },
    })
}
