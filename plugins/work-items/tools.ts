/**
 * MCP tools of the work-items plugin: the same service functions as the REST routes. A caller's
 * listing describes its own organization's custom fields (keys, types, options) in `fields` and
 * in the list tool's `field.<key>` filters.
 */
import { t, type TSchema } from 'elysia'
import { badRequest } from '../../src/http/errors'
import { UuidString } from '../../src/http/models'
import { isUuid } from '../../src/ids'
import { cursorParameter, pageArguments, pageRequest } from '../../src/http/pagination'
import { defineTool } from '../../src/plugin'
import type { Actor } from '../../src/services/identity'
import type { WorkItemRefs } from './keys'
import { ACROSS_PROJECTS_MAX, type WorkItemModels } from './model'
import { BULK_MAX, type BulkPatch, type WorkItemService } from './service'

/** A work item by id, or by key with its project optional (given, the work item must be in it). */
const target = {
  projectId: t.Optional(UuidString({ description: 'The work item\'s project: required by no call (a key or an id names the work item); given, the work item must be in it.' })),
  workItemId: t.String({ minLength: 1, maxLength: 100, description: 'The work item id, or its key: `ENG-123` (any case).' }),
}

/**
 * The list tool's project: one (its list), several (the list across them), or none (across every
 * project the caller views). Checked as the cross-project list's `projectId` filter is (400 naming
 * it) unless it is one id.
 */
const ListProjects = t.Optional(
  t.String({
    maxLength: ACROSS_PROJECTS_MAX * 37,
    description: `A project id: that project's list (content order by default). Omitted: the work items of every project you can view, the most recently changed first by default; or up to ${ACROSS_PROJECTS_MAX} comma-separated project ids: those of them you can view.`,
  }),
)

/** Each tool's arguments under one set of work item models. */
const inputs = (models: WorkItemModels) => ({
  // Custom-field filters (`field.<key>`) are the organization's own: taken besides the listed arguments.
  list: t.Object(
    { projectId: ListProjects, viewId: t.Optional(UuidString({ description: "A saved view of the project (`list_views`): its filters and sort apply, the other arguments on top. Needs one `projectId`." })), ...pageArguments(), ...cursorParameter(), ...models.filterArguments },
    { additionalProperties: t.String({ maxLength: 2000 }) },
  ),
  create: t.Object({ projectId: UuidString(), ...models.input.properties }, { additionalProperties: false }),
  update: t.Object({ ...target, ...models.patch.properties }, { additionalProperties: false, minProperties: 2 }),
  bulkCreate: t.Object({ projectId: UuidString(), ...models.bulkCreate.properties }, { additionalProperties: false }),
  bulkUpdate: t.Object({ projectId: UuidString(), ...models.bulkUpdate.properties }, { additionalProperties: false }),
})

export function workItemTools(workItems: WorkItemService, models: WorkItemModels, refs: WorkItemRefs) {
  const general = inputs(models)
  /** The arguments of tool `name` as the caller's organization sees them (one read per listing). */
  const described = (name: keyof ReturnType<typeof inputs>) => async (actor: Actor, memo: Map<string, Promise<unknown>>): Promise<TSchema> => {
    const key = `work-items ${actor.organizationId}`
    if (!memo.has(key)) memo.set(key, workItems.modelsFor(actor.organizationId).then(inputs))
    return ((await memo.get(key)) as ReturnType<typeof inputs>)[name]
  }
  return [
    defineTool({
      name: 'list_work_items',
      description:
        'Work items of a project (`projectId`), in content order unless `sort` says otherwise; without `projectId`, of every project you can view, the most recently changed first (`sort=-updatedAt`). Filtered as the REST lists are (`status=todo,in_progress`, `priority=gte:2`, `assigneeId=me` or `none`, `label`, `field.<key>`, …); `sort=priority` puts urgent first, no priority last. Continue with `cursor` from meta.nextCursor.',
      scopes: ['work_items:read'],
      readOnly: true,
      input: general.list,
      describe: described('list'),
      run: (actor, { projectId, viewId, ...query }) => {
        const projects = projectId as string | undefined
        if (isUuid(projects)) return workItems.list(actor, projects, viewId === undefined ? query : { ...query, view: viewId }, pageRequest(query))
        if (viewId !== undefined) throw badRequest('A view is of one project: name it in `projectId`.', 'viewId')
        return workItems.across(actor, projects === undefined ? query : { ...query, projectId: projects }, pageRequest(query))
      },
    }),
    defineTool({
      name: 'list_views',
      description: "The saved views of a project you can view: your private ones and the shared ones, by name. Apply one with `list_work_items {projectId, viewId}`.",
      scopes: ['work_items:read'],
      readOnly: true,
      input: t.Object({ projectId: UuidString(), shared: t.Optional(t.Union([t.Literal('true'), t.Literal('false')])), ...pageArguments(), ...cursorParameter() }, { additionalProperties: false }),
      run: (actor, { projectId, ...query }) => workItems.views.list(actor, projectId, query, pageRequest(query)),
    }),
    defineTool({
      name: 'get_work_item',
      description: 'One work item, by id or key (`ENG-123`).',
      scopes: ['work_items:read'],
      readOnly: true,
      input: t.Object(target, { additionalProperties: false }),
      run: (actor, input) => refs.get(actor, input.workItemId, input.projectId),
    }),
    defineTool({
      name: 'create_work_item',
      description: 'Create a work item at the end of the project (needs editor access). Only `title` is required.',
      scopes: ['work_items:write'],
      input: general.create,
      describe: described('create'),
      run: (actor, { projectId, ...body }) => workItems.create(actor, projectId as string, body as never),
    }),
    defineTool({
      name: 'update_work_item',
      description: 'Change fields of a work item named by id or key (`ENG-123`; needs editor access); only the named fields change (`fields` merges: named keys change, null clears one).',
      scopes: ['work_items:write'],
      input: general.update,
      describe: described('update'),
      run: (actor, { projectId, workItemId, ...patch }) => {
        if (!Object.keys(patch).length) throw badRequest('Name at least one field to change besides the work item.')
        return refs.update(actor, workItemId as string, patch as never, undefined, projectId as string | undefined)
      },
    }),
    defineTool({
      name: 'bulk_create_work_items',
      description: `Create up to ${BULK_MAX} work items in one transaction (needs editor access): all or none; the result lists them in order, and a refusal names each failing item (\`items[3].title\`).`,
      scopes: ['work_items:write'],
      input: general.bulkCreate,
      describe: described('bulkCreate'),
      run: (actor, { projectId, items }) => workItems.bulkCreate(actor, projectId as string, items as never),
    }),
    defineTool({
      name: 'bulk_update_work_items',
      description: `Change up to ${BULK_MAX} work items in one transaction (needs editor access): each item names its \`id\`, optionally its \`ifMatch\` ETag, and only the fields to change (others stay). All or none.`,
      scopes: ['work_items:write'],
      input: general.bulkUpdate,
      describe: described('bulkUpdate'),
      run: (actor, { projectId, items }) => workItems.bulkUpdate(actor, projectId as string, items as BulkPatch[]),
    }),
    defineTool({
      name: 'delete_work_item',
      description: 'Delete a work item, named by id or key (`ENG-123`), with its entries and relationships (needs editor access).',
      scopes: ['work_items:write'],
      destructive: true,
      input: t.Object(target, { additionalProperties: false }),
      run: (actor, input) => refs.delete(actor, input.workItemId, undefined, input.projectId),
    }),
  ]
}
