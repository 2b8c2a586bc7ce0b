/**
 * The authorization table: every API v1 endpoint with its scopes and access rule, and the rule
 * that turns (key, role, organization) into the exact status and error code. A new endpoint is
 * added here; the REST matrix and the MCP twins are both driven from it.
 */
import type { AccessLevel } from '../../plugins/projects/api'
import type { TestService, TestUser } from '../helpers/service'

export const ROLES = ['non-member', 'viewer', 'editor', 'owner', 'administrator', 'superadministrator'] as const
export type MatrixRole = (typeof ROLES)[number]
export type KeyVariant = 'none' | 'without-scope' | 'with-scope'

export type Rule =
  /** Any live key (no scope needed beyond the listed ones). */
  | { kind: 'any' }
  /** Organization-wide read: the scope decides. */
  | { kind: 'organization' }
  /** Organization-wide write: an administrator or superadministrator. */
  | { kind: 'administrator' }
  /** Project-scoped: the effective level must reach `level`. */
  | { kind: 'project'; level: AccessLevel }
  /** The project must be visible, then the owner must be an administrator. */
  | { kind: 'project-administrator' }
  /** A dashboard page made by `owner` with `viewer` on its access list: read, or manage. */
  | { kind: 'page'; manage: boolean }

/** The resources every case works on, all in organization A. */
export interface World {
  projectId: string
  /** Linked to the project as viewer; no members. */
  linkedTeamId: string
  /** Not linked; has `teamMemberId` as member. */
  otherTeamId: string
  teamMemberId: string
  /** A viewer member of the project, the target of member changes. */
  projectMemberId: string
  /** An active user in no project or team. */
  outsiderId: string
  /** A user invited by the administrator, who has not accepted yet. */
  invitedId: string
  /** Two work items of the project (A, B), an entry on A written by the owner, and "A blocks B". */
  workItemId: string
  otherWorkItemId: string
  /** The first work item's key (`WX-1`): the routes and tools that name a work item by itself take it. */
  workItemKey: string
  entryId: string
  relationshipId: string
  /** A dashboard page created by the owner, the viewer on its access list, with one component. */
  pageId: string
  componentId: string
  messageId: string
  viewerId: string
}

export interface Endpoint {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT'
  /** Documentation path, e.g. `/api/v1/teams/{teamId}`. */
  route: string
  path: (world: World) => string
  body?: (world: World) => unknown
  scopes: string[]
  rule: Rule
  /** Names one resource of organization A (404 from elsewhere), rather than a collection. */
  targeted: boolean
  /** Changes state when it succeeds (each success then gets a fresh world). */
  mutates: boolean
  /** A POST that acts rather than creates (mark-read): 200, not 201. */
  action?: boolean
  /** A body sent as-is with this Content-Type instead of JSON (an import's NDJSON). */
  upload?: { type: string; body: (world: World) => string }
  /**
   * The answer when every access check passes, when it is not a success: an import into the
   * world's project, which has work items, is 409 (the conflict is checked after access).
   */
  granted?: Expectation
  /** The MCP tool that calls the same service function, if any, and its arguments. */
  tool?: string
  args?: (world: World) => Record<string, unknown>
}

const unique = () => Math.random().toString(36).slice(2, 10)

export const ENDPOINTS: Endpoint[] = [
  { method: 'GET', route: '/api/v1/users/me', path: () => '/api/v1/users/me', scopes: [], rule: { kind: 'any' }, targeted: false, mutates: false, tool: 'get_current_user', args: () => ({}) },
  { method: 'GET', route: '/api/v1/users/{userId}', path: (w) => `/api/v1/users/${w.outsiderId}`, scopes: ['users:read'], rule: { kind: 'organization' }, targeted: true, mutates: false, tool: 'get_user', args: (w) => ({ userId: w.outsiderId }) },
  { method: 'GET', route: '/api/v1/users', path: () => '/api/v1/users', scopes: ['users:read'], rule: { kind: 'organization' }, targeted: false, mutates: false, tool: 'list_users', args: () => ({}) },
  { method: 'POST', route: '/api/v1/users', path: () => '/api/v1/users', body: () => ({ email: `invitee-${unique()}@example.com` }), scopes: ['users:write'], rule: { kind: 'administrator' }, targeted: false, mutates: true, tool: 'invite_user', args: () => ({ email: `invitee-${unique()}@example.com` }) },
  { method: 'PATCH', route: '/api/v1/users/{userId}', path: (w) => `/api/v1/users/${w.outsiderId}`, body: () => ({ role: 'administrator' }), scopes: ['users:write'], rule: { kind: 'administrator' }, targeted: true, mutates: true, tool: 'update_user', args: (w) => ({ userId: w.outsiderId, role: 'administrator' }) },
  { method: 'POST', route: '/api/v1/users/{userId}/invite', path: (w) => `/api/v1/users/${w.invitedId}/invite`, scopes: ['users:write'], rule: { kind: 'administrator' }, targeted: true, mutates: true },

  { method: 'GET', route: '/api/v1/teams', path: () => '/api/v1/teams', scopes: ['teams:read'], rule: { kind: 'organization' }, targeted: false, mutates: false, tool: 'list_teams', args: () => ({}) },
  { method: 'POST', route: '/api/v1/teams', path: () => '/api/v1/teams', body: () => ({ name: `Team ${unique()}` }), scopes: ['teams:write'], rule: { kind: 'administrator' }, targeted: false, mutates: true },
  { method: 'GET', route: '/api/v1/teams/{teamId}', path: (w) => `/api/v1/teams/${w.linkedTeamId}`, scopes: ['teams:read'], rule: { kind: 'organization' }, targeted: true, mutates: false },
  { method: 'PATCH', route: '/api/v1/teams/{teamId}', path: (w) => `/api/v1/teams/${w.linkedTeamId}`, body: () => ({ description: `changed ${unique()}` }), scopes: ['teams:write'], rule: { kind: 'administrator' }, targeted: true, mutates: true },
  { method: 'DELETE', route: '/api/v1/teams/{teamId}', path: (w) => `/api/v1/teams/${w.otherTeamId}`, scopes: ['teams:write'], rule: { kind: 'administrator' }, targeted: true, mutates: true },
  { method: 'GET', route: '/api/v1/teams/{teamId}/members', path: (w) => `/api/v1/teams/${w.otherTeamId}/members`, scopes: ['team_members:read'], rule: { kind: 'organization' }, targeted: true, mutates: false, tool: 'list_team_members', args: (w) => ({ teamId: w.otherTeamId }) },
  { method: 'POST', route: '/api/v1/teams/{teamId}/members', path: (w) => `/api/v1/teams/${w.otherTeamId}/members`, body: (w) => ({ userId: w.outsiderId }), scopes: ['team_members:write'], rule: { kind: 'administrator' }, targeted: true, mutates: true },
  { method: 'DELETE', route: '/api/v1/teams/{teamId}/members/{userId}', path: (w) => `/api/v1/teams/${w.otherTeamId}/members/${w.teamMemberId}`, scopes: ['team_members:write'], rule: { kind: 'administrator' }, targeted: true, mutates: true },
  { method: 'GET', route: '/api/v1/teams/{teamId}/projects', path: (w) => `/api/v1/teams/${w.linkedTeamId}/projects`, scopes: ['team_projects:read'], rule: { kind: 'organization' }, targeted: true, mutates: false, tool: 'list_team_projects', args: (w) => ({ teamId: w.linkedTeamId }) },

  { method: 'GET', route: '/api/v1/projects', path: () => '/api/v1/projects', scopes: ['projects:read'], rule: { kind: 'any' }, targeted: false, mutates: false, tool: 'list_projects', args: () => ({}) },
  { method: 'POST', route: '/api/v1/projects', path: () => '/api/v1/projects', body: () => ({ name: `Project ${unique()}` }), scopes: ['projects:write'], rule: { kind: 'any' }, targeted: false, mutates: true, tool: 'create_project', args: () => ({ name: `Project ${unique()}` }) },
  { method: 'GET', route: '/api/v1/projects/{projectId}', path: (w) => `/api/v1/projects/${w.projectId}`, scopes: ['projects:read'], rule: { kind: 'project', level: 'viewer' }, targeted: true, mutates: false, tool: 'get_project', args: (w) => ({ projectId: w.projectId }) },
  { method: 'PATCH', route: '/api/v1/projects/{projectId}', path: (w) => `/api/v1/projects/${w.projectId}`, body: () => ({ name: `Renamed ${unique()}` }), scopes: ['projects:write'], rule: { kind: 'project', level: 'owner' }, targeted: true, mutates: true },
  { method: 'DELETE', route: '/api/v1/projects/{projectId}', path: (w) => `/api/v1/projects/${w.projectId}`, scopes: ['projects:write'], rule: { kind: 'project', level: 'owner' }, targeted: true, mutates: true },
  {
    method: 'POST',
    route: '/api/v1/projects/{projectId}/import',
    path: (w) => `/api/v1/projects/${w.projectId}/import`,
    upload: { type: 'application/x-ndjson', body: () => JSON.stringify({ type: 'work_item', data: { title: 'Imported' } }) },
    scopes: ['projects:write', 'work_items:write', 'entries:write', 'relationships:write'],
    rule: { kind: 'project', level: 'owner' },
    targeted: true,
    mutates: true,
    granted: { status: 409, code: 'CONFLICT' },
  },
  { method: 'GET', route: '/api/v1/projects/{projectId}/export', path: (w) => `/api/v1/projects/${w.projectId}/export`, scopes: ['projects:read', 'work_items:read', 'entries:read', 'relationships:read'], rule: { kind: 'project', level: 'owner' }, targeted: true, mutates: false },
  { method: 'GET', route: '/api/v1/projects/{projectId}/members', path: (w) => `/api/v1/projects/${w.projectId}/members`, scopes: ['project_access:read'], rule: { kind: 'project', level: 'viewer' }, targeted: true, mutates: false, tool: 'list_project_members', args: (w) => ({ projectId: w.projectId }) },
  { method: 'POST', route: '/api/v1/projects/{projectId}/members', path: (w) => `/api/v1/projects/${w.projectId}/members`, body: (w) => ({ userId: w.outsiderId, accessLevel: 'viewer' }), scopes: ['project_access:write'], rule: { kind: 'project', level: 'owner' }, targeted: true, mutates: true },
  { method: 'PATCH', route: '/api/v1/projects/{projectId}/members/{userId}', path: (w) => `/api/v1/projects/${w.projectId}/members/${w.projectMemberId}`, body: () => ({ accessLevel: 'editor' }), scopes: ['project_access:write'], rule: { kind: 'project', level: 'owner' }, targeted: true, mutates: true },
  { method: 'DELETE', route: '/api/v1/projects/{projectId}/members/{userId}', path: (w) => `/api/v1/projects/${w.projectId}/members/${w.projectMemberId}`, scopes: ['project_access:write'], rule: { kind: 'project', level: 'owner' }, targeted: true, mutates: true },
  { method: 'GET', route: '/api/v1/projects/{projectId}/teams', path: (w) => `/api/v1/projects/${w.projectId}/teams`, scopes: ['project_access:read'], rule: { kind: 'project', level: 'viewer' }, targeted: true, mutates: false },
  { method: 'POST', route: '/api/v1/projects/{projectId}/teams', path: (w) => `/api/v1/projects/${w.projectId}/teams`, body: (w) => ({ teamId: w.otherTeamId, accessLevel: 'viewer' }), scopes: ['project_access:write'], rule: { kind: 'project', level: 'owner' }, targeted: true, mutates: true },
  { method: 'PATCH', route: '/api/v1/projects/{projectId}/teams/{teamId}', path: (w) => `/api/v1/projects/${w.projectId}/teams/${w.linkedTeamId}`, body: () => ({ accessLevel: 'editor' }), scopes: ['project_access:write'], rule: { kind: 'project', level: 'owner' }, targeted: true, mutates: true },
  { method: 'DELETE', route: '/api/v1/projects/{projectId}/teams/{teamId}', path: (w) => `/api/v1/projects/${w.projectId}/teams/${w.linkedTeamId}`, scopes: ['project_access:write'], rule: { kind: 'project', level: 'owner' }, targeted: true, mutates: true },

  { method: 'GET', route: '/api/v1/work-items', path: () => '/api/v1/work-items', scopes: ['work_items:read'], rule: { kind: 'organization' }, targeted: false, mutates: false, tool: 'list_work_items', args: () => ({}) },
  { method: 'GET', route: '/api/v1/projects/{projectId}/work-items', path: (w) => `/api/v1/projects/${w.projectId}/work-items`, scopes: ['work_items:read'], rule: { kind: 'project', level: 'viewer' }, targeted: true, mutates: false, tool: 'list_work_items', args: (w) => ({ projectId: w.projectId }) },
  { method: 'POST', route: '/api/v1/projects/{projectId}/work-items', path: (w) => `/api/v1/projects/${w.projectId}/work-items`, body: () => ({ title: `Item ${unique()}` }), scopes: ['work_items:write'], rule: { kind: 'project', level: 'editor' }, targeted: true, mutates: true, tool: 'create_work_item', args: (w) => ({ projectId: w.projectId, title: `Item ${unique()}` }) },
  { method: 'GET', route: '/api/v1/projects/{projectId}/work-items/{workItemId}', path: (w) => `/api/v1/projects/${w.projectId}/work-items/${w.workItemId}`, scopes: ['work_items:read'], rule: { kind: 'project', level: 'viewer' }, targeted: true, mutates: false, tool: 'get_work_item', args: (w) => ({ projectId: w.projectId, workItemId: w.workItemId }) },
  { method: 'PATCH', route: '/api/v1/projects/{projectId}/work-items/{workItemId}', path: (w) => `/api/v1/projects/${w.projectId}/work-items/${w.workItemId}`, body: () => ({ title: `Renamed ${unique()}` }), scopes: ['work_items:write'], rule: { kind: 'project', level: 'editor' }, targeted: true, mutates: true, tool: 'update_work_item', args: (w) => ({ projectId: w.projectId, workItemId: w.workItemId, title: `Renamed ${unique()}` }) },
  { method: 'DELETE', route: '/api/v1/projects/{projectId}/work-items/{workItemId}', path: (w) => `/api/v1/projects/${w.projectId}/work-items/${w.workItemId}`, scopes: ['work_items:write'], rule: { kind: 'project', level: 'editor' }, targeted: true, mutates: true, tool: 'delete_work_item', args: (w) => ({ projectId: w.projectId, workItemId: w.workItemId }) },
  // A work item by itself, by key (GET, PATCH) or id (DELETE): the project's rules, 404 from elsewhere; the tools without projectId.
  { method: 'GET', route: '/api/v1/work-items/{workItemId}', path: (w) => `/api/v1/work-items/${w.workItemKey}`, scopes: ['work_items:read'], rule: { kind: 'project', level: 'viewer' }, targeted: true, mutates: false, tool: 'get_work_item', args: (w) => ({ workItemId: w.workItemKey }) },
  { method: 'PATCH', route: '/api/v1/work-items/{workItemId}', path: (w) => `/api/v1/work-items/${w.workItemKey.toLowerCase()}`, body: () => ({ title: `Renamed ${unique()}` }), scopes: ['work_items:write'], rule: { kind: 'project', level: 'editor' }, targeted: true, mutates: true, tool: 'update_work_item', args: (w) => ({ workItemId: w.workItemKey, title: `Renamed ${unique()}` }) },
  { method: 'DELETE', route: '/api/v1/work-items/{workItemId}', path: (w) => `/api/v1/work-items/${w.workItemId}`, scopes: ['work_items:write'], rule: { kind: 'project', level: 'editor' }, targeted: true, mutates: true, tool: 'delete_work_item', args: (w) => ({ workItemId: w.workItemKey }) },
  // Watching and the inbox: the caller's own state, not audited (so not `mutates`); a thread's PATCH is its owner's alone (tests/plugins/notifications.test.ts).
  { method: 'GET', route: '/api/v1/work-items/{workItemId}/subscription', path: (w) => `/api/v1/work-items/${w.workItemKey}/subscription`, scopes: ['work_items:read'], rule: { kind: 'project', level: 'viewer' }, targeted: true, mutates: false },
  { method: 'PUT', route: '/api/v1/work-items/{workItemId}/subscription', path: (w) => `/api/v1/work-items/${w.workItemId}/subscription`, scopes: ['work_items:read'], rule: { kind: 'project', level: 'viewer' }, targeted: true, mutates: false, tool: 'watch_work_item', args: (w) => ({ workItemId: w.workItemKey }) },
  { method: 'DELETE', route: '/api/v1/work-items/{workItemId}/subscription', path: (w) => `/api/v1/work-items/${w.workItemId}/subscription`, scopes: ['work_items:read'], rule: { kind: 'project', level: 'viewer' }, targeted: true, mutates: false },
  { method: 'GET', route: '/api/v1/projects/{projectId}/subscription', path: (w) => `/api/v1/projects/${w.projectId}/subscription`, scopes: ['work_items:read'], rule: { kind: 'project', level: 'viewer' }, targeted: true, mutates: false },
  { method: 'PUT', route: '/api/v1/projects/{projectId}/subscription', path: (w) => `/api/v1/projects/${w.projectId}/subscription`, scopes: ['work_items:read'], rule: { kind: 'project', level: 'viewer' }, targeted: true, mutates: false },
  { method: 'DELETE', route: '/api/v1/projects/{projectId}/subscription', path: (w) => `/api/v1/projects/${w.projectId}/subscription`, scopes: ['work_items:read'], rule: { kind: 'project', level: 'viewer' }, targeted: true, mutates: false },
  { method: 'GET', route: '/api/v1/notifications', path: () => '/api/v1/notifications', scopes: ['notifications:read'], rule: { kind: 'any' }, targeted: false, mutates: false, tool: 'list_notifications', args: () => ({}) },
  { method: 'POST', route: '/api/v1/notifications/mark-read', path: () => '/api/v1/notifications/mark-read', body: () => ({}), scopes: ['notifications:write'], rule: { kind: 'any' }, targeted: false, mutates: false, action: true, tool: 'mark_notifications_read', args: () => ({}) },
  { method: 'GET', route: '/api/v1/work-items/{workItemId}/entries', path: (w) => `/api/v1/work-items/${w.workItemId}/entries`, scopes: ['entries:read'], rule: { kind: 'project', level: 'viewer' }, targeted: true, mutates: false, tool: 'list_entries', args: (w) => ({ workItemId: w.workItemId }) },
  { method: 'POST', route: '/api/v1/work-items/{workItemId}/entries', path: (w) => `/api/v1/work-items/${w.workItemId}/entries`, body: () => ({ body: `Note ${unique()}` }), scopes: ['entries:write'], rule: { kind: 'project', level: 'editor' }, targeted: true, mutates: true, tool: 'create_entry', args: (w) => ({ workItemId: w.workItemId, body: `Note ${unique()}` }) },
  { method: 'GET', route: '/api/v1/work-items/{workItemId}/entries/{entryId}', path: (w) => `/api/v1/work-items/${w.workItemId}/entries/${w.entryId}`, scopes: ['entries:read'], rule: { kind: 'project', level: 'viewer' }, targeted: true, mutates: false },
  // The entry's author is the owner: only the author or an owner may change it.
  { method: 'PATCH', route: '/api/v1/work-items/{workItemId}/entries/{entryId}', path: (w) => `/api/v1/work-items/${w.workItemId}/entries/${w.entryId}`, body: () => ({ body: `Edited ${unique()}` }), scopes: ['entries:write'], rule: { kind: 'project', level: 'owner' }, targeted: true, mutates: true, tool: 'update_entry', args: (w) => ({ workItemId: w.workItemId, entryId: w.entryId, body: `Edited ${unique()}` }) },
  { method: 'DELETE', route: '/api/v1/work-items/{workItemId}/entries/{entryId}', path: (w) => `/api/v1/work-items/${w.workItemId}/entries/${w.entryId}`, scopes: ['entries:write'], rule: { kind: 'project', level: 'owner' }, targeted: true, mutates: true, tool: 'delete_entry', args: (w) => ({ workItemId: w.workItemId, entryId: w.entryId }) },
  { method: 'GET', route: '/api/v1/projects/{projectId}/relationships', path: (w) => `/api/v1/projects/${w.projectId}/relationships`, scopes: ['relationships:read'], rule: { kind: 'project', level: 'viewer' }, targeted: true, mutates: false, tool: 'list_relationships', args: (w) => ({ projectId: w.projectId }) },
  { method: 'POST', route: '/api/v1/projects/{projectId}/relationships', path: (w) => `/api/v1/projects/${w.projectId}/relationships`, body: (w) => ({ sourceWorkItemId: w.otherWorkItemId, targetWorkItemId: w.workItemId, type: 'duplicates' }), scopes: ['relationships:write'], rule: { kind: 'project', level: 'editor' }, targeted: true, mutates: true, tool: 'create_relationship', args: (w) => ({ projectId: w.projectId, sourceWorkItemId: w.otherWorkItemId, targetWorkItemId: w.workItemId, type: 'duplicates' }) },
  { method: 'GET', route: '/api/v1/projects/{projectId}/relationships/{relationshipId}', path: (w) => `/api/v1/projects/${w.projectId}/relationships/${w.relationshipId}`, scopes: ['relationships:read'], rule: { kind: 'project', level: 'viewer' }, targeted: true, mutates: false },
  { method: 'PATCH', route: '/api/v1/projects/{projectId}/relationships/{relationshipId}', path: (w) => `/api/v1/projects/${w.projectId}/relationships/${w.relationshipId}`, body: () => ({ type: 'parent_of' }), scopes: ['relationships:write'], rule: { kind: 'project', level: 'editor' }, targeted: true, mutates: true },
  { method: 'DELETE', route: '/api/v1/projects/{projectId}/relationships/{relationshipId}', path: (w) => `/api/v1/projects/${w.projectId}/relationships/${w.relationshipId}`, scopes: ['relationships:write'], rule: { kind: 'project', level: 'editor' }, targeted: true, mutates: true, tool: 'delete_relationship', args: (w) => ({ projectId: w.projectId, relationshipId: w.relationshipId }) },
  { method: 'GET', route: '/api/v1/projects/{projectId}/content-order', path: (w) => `/api/v1/projects/${w.projectId}/content-order`, scopes: ['work_items:read', 'entries:read'], rule: { kind: 'project', level: 'viewer' }, targeted: true, mutates: false },
  { method: 'PUT', route: '/api/v1/projects/{projectId}/content-order', path: (w) => `/api/v1/projects/${w.projectId}/content-order`, body: (w) => ({ workItems: [w.otherWorkItemId, w.workItemId] }), scopes: ['work_items:write', 'entries:write'], rule: { kind: 'project', level: 'editor' }, targeted: true, mutates: true, tool: 'reorder_content', args: (w) => ({ projectId: w.projectId, workItems: [w.otherWorkItemId, w.workItemId] }) },
  { method: 'GET', route: '/api/v1/projects/{projectId}/search', path: (w) => `/api/v1/projects/${w.projectId}/search?q=alpha`, scopes: ['work_items:read', 'entries:read', 'relationships:read'], rule: { kind: 'project', level: 'viewer' }, targeted: true, mutates: false, tool: 'search_project', args: (w) => ({ projectId: w.projectId, q: 'alpha' }) },

  { method: 'GET', route: '/api/v1/pages', path: () => '/api/v1/pages', scopes: ['dashboards:read'], rule: { kind: 'any' }, targeted: false, mutates: false },
  { method: 'POST', route: '/api/v1/pages', path: () => '/api/v1/pages', body: () => ({ name: `page-${unique()}` }), scopes: ['dashboards:write'], rule: { kind: 'any' }, targeted: false, mutates: true },
  { method: 'GET', route: '/api/v1/pages/{pageId}', path: (w) => `/api/v1/pages/${w.pageId}`, scopes: ['dashboards:read'], rule: { kind: 'page', manage: false }, targeted: true, mutates: false },
  { method: 'PATCH', route: '/api/v1/pages/{pageId}', path: (w) => `/api/v1/pages/${w.pageId}`, body: () => ({ title: `Title ${unique()}` }), scopes: ['dashboards:write'], rule: { kind: 'page', manage: true }, targeted: true, mutates: true },
  { method: 'DELETE', route: '/api/v1/pages/{pageId}', path: (w) => `/api/v1/pages/${w.pageId}`, scopes: ['dashboards:write'], rule: { kind: 'page', manage: true }, targeted: true, mutates: true },
  { method: 'GET', route: '/api/v1/pages/{pageId}/access', path: (w) => `/api/v1/pages/${w.pageId}/access`, scopes: ['dashboards:read'], rule: { kind: 'page', manage: false }, targeted: true, mutates: false },
  { method: 'POST', route: '/api/v1/pages/{pageId}/access', path: (w) => `/api/v1/pages/${w.pageId}/access`, body: (w) => ({ userId: w.outsiderId }), scopes: ['dashboards:write'], rule: { kind: 'page', manage: true }, targeted: true, mutates: true },
  { method: 'DELETE', route: '/api/v1/pages/{pageId}/access/{principalId}', path: (w) => `/api/v1/pages/${w.pageId}/access/${w.viewerId}`, scopes: ['dashboards:write'], rule: { kind: 'page', manage: true }, targeted: true, mutates: true },
  { method: 'GET', route: '/api/v1/pages/{pageId}/components', path: (w) => `/api/v1/pages/${w.pageId}/components`, scopes: ['dashboards:read'], rule: { kind: 'page', manage: false }, targeted: true, mutates: false },
  { method: 'POST', route: '/api/v1/pages/{pageId}/components', path: (w) => `/api/v1/pages/${w.pageId}/components`, body: () => ({ type: 'barChart' }), scopes: ['dashboards:write'], rule: { kind: 'page', manage: true }, targeted: true, mutates: true },
  { method: 'GET', route: '/api/v1/pages/{pageId}/components/{componentId}', path: (w) => `/api/v1/pages/${w.pageId}/components/${w.componentId}`, scopes: ['dashboards:read'], rule: { kind: 'page', manage: false }, targeted: true, mutates: false },
  { method: 'PATCH', route: '/api/v1/pages/{pageId}/components/{componentId}', path: (w) => `/api/v1/pages/${w.pageId}/components/${w.componentId}`, body: () => ({ title: `Widget ${unique()}` }), scopes: ['dashboards:write'], rule: { kind: 'page', manage: true }, targeted: true, mutates: true },
  { method: 'GET', route: '/api/v1/pages/{pageId}/messages', path: (w) => `/api/v1/pages/${w.pageId}/messages`, scopes: ['dashboards:read'], rule: { kind: 'page', manage: false }, targeted: true, mutates: false },
  { method: 'GET', route: '/api/v1/pages/{pageId}/messages/{messageId}', path: (w) => `/api/v1/pages/${w.pageId}/messages/${w.messageId}`, scopes: ['dashboards:read'], rule: { kind: 'page', manage: false }, targeted: true, mutates: false },
  { method: 'DELETE', route: '/api/v1/pages/{pageId}/components/{componentId}', path: (w) => `/api/v1/pages/${w.pageId}/components/${w.componentId}`, scopes: ['dashboards:write'], rule: { kind: 'page', manage: true }, targeted: true, mutates: true },

  { method: 'GET', route: '/api/v1/audit-logs', path: () => '/api/v1/audit-logs', scopes: ['audit_logs:read'], rule: { kind: 'administrator' }, targeted: false, mutates: false, tool: 'list_audit_logs', args: () => ({}) },
  { method: 'GET', route: '/api/v1/projects/{projectId}/audit-logs', path: (w) => `/api/v1/projects/${w.projectId}/audit-logs`, scopes: ['audit_logs:read'], rule: { kind: 'project-administrator' }, targeted: true, mutates: false, tool: 'list_audit_logs', args: (w) => ({ projectId: w.projectId }) },
]

const LEVEL_OF_ROLE: Record<MatrixRole, AccessLevel | null> = {
  'non-member': null,
  viewer: 'viewer',
  editor: 'editor',
  owner: 'owner',
  administrator: null,
  superadministrator: 'owner',
}
const RANK: Record<AccessLevel, number> = { viewer: 1, editor: 2, owner: 3 }
const isAdministratorRole = (role: MatrixRole) => role === 'administrator' || role === 'superadministrator'

export interface Expectation {
  status: number
  code?: string
}

/** The exact answer for one case: checks run key, scope, visibility, level. */
export function expectedOutcome(endpoint: Endpoint, key: KeyVariant, role: MatrixRole, sameOrganization: boolean): Expectation {
  if (key === 'none') return { status: 401, code: 'UNAUTHORIZED' }
  if (key === 'without-scope') return { status: 403, code: 'INSUFFICIENT_SCOPE' }
  const success = endpoint.granted ?? { status: endpoint.method === 'POST' && !endpoint.action ? 201 : 200 }
  const notFound = { status: 404, code: 'NOT_FOUND' }
  const forbidden = { status: 403, code: 'FORBIDDEN' }
  if (endpoint.targeted && !sameOrganization) return notFound
  const level = LEVEL_OF_ROLE[role]
  switch (endpoint.rule.kind) {
    case 'any':
    case 'organization':
      return success
    case 'administrator':
      return isAdministratorRole(role) ? success : forbidden
    case 'project':
      if (!level) return notFound
      return RANK[level] >= RANK[endpoint.rule.level] ? success : forbidden
    case 'project-administrator':
      if (!level) return notFound
      return isAdministratorRole(role) ? success : forbidden
    case 'page': {
      const manages = role === 'owner' || isAdministratorRole(role)
      if (!manages && role !== 'viewer') return notFound
      return endpoint.rule.manage && !manages ? forbidden : success
    }
  }
}

/** The users playing each role in one organization. */
export type Cast = Record<MatrixRole, TestUser>

export async function createCast(api: TestService, organizationId: string): Promise<Cast> {
  const cast = {} as Cast
  for (const role of ROLES) {
    const orgRole = role === 'administrator' ? 'administrator' : role === 'superadministrator' ? 'superadministrator' : 'member'
    cast[role] = await api.createUser(organizationId, orgRole)
  }
  return cast
}

/** Builds a world in organization A through the API itself, as `cast.owner`. */
export async function buildWorld(api: TestService, cast: Cast, keys: { owner: string; administrator: string }): Promise<World> {
  const post = async (path: string, body: unknown, key: string) => {
    const response = await api.request('POST', path, { key, body })
    if (response.status !== 201) throw new Error(`world: POST ${path} answered ${response.status} ${response.text}`)
    return response.body.data
  }
  const organizationId = cast.owner.organizationId
  const project = await post('/api/v1/projects', { name: `World ${unique()}` }, keys.owner)
  const projectMember = await api.createUser(organizationId)
  const teamMember = await api.createUser(organizationId)
  const outsider = await api.createUser(organizationId)
  const invited = await post('/api/v1/users', { email: `invited-${unique()}@example.com` }, keys.administrator)
  for (const [user, accessLevel] of [[cast.editor, 'editor'], [cast.viewer, 'viewer'], [projectMember, 'viewer']] as const)
    await post(`/api/v1/projects/${project.id}/members`, { userId: user.id, accessLevel }, keys.owner)
  const linkedTeam = await post('/api/v1/teams', { name: `Linked ${unique()}` }, keys.administrator)
  const otherTeam = await post('/api/v1/teams', { name: `Other ${unique()}` }, keys.administrator)
  await post(`/api/v1/teams/${otherTeam.id}/members`, { userId: teamMember.id }, keys.administrator)
  await post(`/api/v1/projects/${project.id}/teams`, { teamId: linkedTeam.id, accessLevel: 'viewer' }, keys.owner)
  const workItem = await post(`/api/v1/projects/${project.id}/work-items`, { title: 'Alpha item', description: 'the first' }, keys.owner)
  const otherWorkItem = await post(`/api/v1/projects/${project.id}/work-items`, { title: 'Beta item' }, keys.owner)
  const entry = await post(`/api/v1/work-items/${workItem.id}/entries`, { body: 'alpha note' }, keys.owner)
  const relationship = await post(`/api/v1/projects/${project.id}/relationships`, { sourceWorkItemId: workItem.id, targetWorkItemId: otherWorkItem.id, type: 'blocks' }, keys.owner)
  const page = await post('/api/v1/pages', { name: `world-${unique()}` }, keys.owner)
  await post(`/api/v1/pages/${page.id}/access`, { userId: cast.viewer.id }, keys.owner)
  const component = await post(`/api/v1/pages/${page.id}/components`, { type: 'pieChart' }, keys.owner)
  const message = await api.request('POST', '/api/message', { body: { apiKey: cast.owner.displayApiKey, pageName: page.name, message: 'world message' } })
  if (message.status !== 200) throw new Error(`world: POST /api/message answered ${message.status} ${message.text}`)
  return {
    pageId: page.id,
    messageId: message.headers.get('x-message-id')!,
    componentId: component.id,
    viewerId: cast.viewer.id,
    workItemId: workItem.id,
    otherWorkItemId: otherWorkItem.id,
    workItemKey: workItem.key,
    entryId: entry.id,
    relationshipId: relationship.id,
    projectId: project.id,
    linkedTeamId: linkedTeam.id,
    otherTeamId: otherTeam.id,
    teamMemberId: teamMember.id,
    projectMemberId: projectMember.id,
    outsiderId: outsider.id,
    invitedId: invited.id,
  }
}

/** The key a case sends: none, one with every scope but the endpoint's, one with exactly its scopes. */
export const VARIANTS: KeyVariant[] = ['none', 'without-scope', 'with-scope']

/** The variants that apply to an endpoint (a key without the scope only when it needs one). */
export const variantsFor = (endpoint: Endpoint): KeyVariant[] => VARIANTS.filter((variant) => variant !== 'without-scope' || endpoint.scopes.length > 0)

export interface Matrix {
  casts: { same: Cast; other: Cast }
  allScopes: string[]
  /** The shared world every refused or read-only case works on. */
  world: World
  /** A key of the user with exactly these scopes, made once and reused. */
  keyFor(userId: string, scopes: string[]): Promise<string>
  /** A fresh world in organization A (for a mutating case that succeeds). */
  worldBuilder(): Promise<World>
}

/** The casts of organizations A and B, the key cache, and the shared world, on `api`. */
export async function setUpMatrix(api: TestService): Promise<Matrix> {
  const keyCache = new Map<string, string>()
  const allScopes = api.service.core.scopes.map((scope) => scope.name)
  const keyFor = async (userId: string, scopes: string[]) => {
    const signature = `${userId}:${[...scopes].sort().join(',')}`
    let key = keyCache.get(signature)
    if (!key) {
      key = (await api.createKey(userId, scopes)).secret
      keyCache.set(signature, key)
    }
    return key
  }
  const casts = {
    same: await createCast(api, await api.createOrganization('A')),
    other: await createCast(api, await api.createOrganization('B')),
  }
  const worldBuilder = async () =>
    buildWorld(api, casts.same, {
      owner: await keyFor(casts.same.owner.id, allScopes),
      administrator: await keyFor(casts.same.administrator.id, allScopes),
    })
  return { casts, allScopes, keyFor, worldBuilder, world: await worldBuilder() }
}
