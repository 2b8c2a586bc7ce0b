/**
 * Project access: the one service every project-scoped plugin asks. It is provided by the
 * `projects` plugin; no other plugin computes access itself.
 */
import type { SQL } from 'drizzle-orm'
import type { Executor } from '../../src/db'
import { forbidden } from '../../src/http/errors'
import type { Actor } from '../../src/services/identity'
import { serviceRef } from '../../src/services/registry'

/** The member's access check and the members page, compiled, as the service runs them (statements run elsewhere: pgbench). */
export { accessCheckStatement } from './access-rule'
export { membersPageStatement } from './grant-kinds'

export type AccessLevel = 'viewer' | 'editor' | 'owner'
export const ACCESS_LEVELS: readonly AccessLevel[] = ['viewer', 'editor', 'owner']

/** viewer < editor < owner. */
export const levelRank = (level: AccessLevel | null | undefined): number => (level ? ACCESS_LEVELS.indexOf(level) + 1 : 0)

const REQUIRED_MESSAGE: Record<AccessLevel, string> = {
  viewer: 'This needs viewer access to the project.',
  editor: 'This needs editor access to the project.',
  owner: 'This needs owner access to the project.',
}

/** Throws 403 FORBIDDEN when `access` is below `required` (after the thing was found: 404 first). */
export function assertLevel(access: { level: AccessLevel }, required: AccessLevel): void {
  if (levelRank(access.level) < levelRank(required)) throw forbidden(REQUIRED_MESSAGE[required])
}

export interface ProjectAccess {
  projectId: string
  organizationId: string
  /** The caller's effective level: the highest of direct membership and linked teams. */
  level: AccessLevel
}

export interface ProjectAccessService {
  /**
   * The caller's access to the project, in one query. Throws 404 when the project is unknown,
   * in another organization or invisible to the caller, and 403 FORBIDDEN when it is visible but
   * the level is below `required`. `executor` lets a transaction lock and check together.
   */
  requireProjectAccess(actor: Actor, projectId: string, required: AccessLevel, executor?: Executor): Promise<ProjectAccess>
  /**
   * The same check for a list read, in the same one statement, with the version its cached
   * pages are keyed on (the project's and the organization's: `ListCache.page`).
   */
  listAccess(actor: Actor, projectId: string, required?: AccessLevel): Promise<ProjectAccess & { version: string }>
  /**
   * The ids of the projects the actor can see, as a subquery (`select p.id from projects p where
   * …`, the actor's organization and user bound): the same rule as the check, for list statements
   * of other plugins (`… where x.project_id in (<subquery>)`).
   */
  visibleProjects(actor: Actor): SQL
  /**
   * A condition, for statements of other plugins, that the organization's active user `user` can
   * view `project` now (each a column or a bound value): the same rule as the check, set-based, so
   * one statement can keep, of many users, those who see a project (notifications' fan-out).
   */
  viewerCondition(organization: SQL, project: SQL, user: SQL): SQL
  /**
   * Of `projectIds`, those the organization's user can see now by the same rule (none for a
   * deactivated user): for work done later on someone's behalf, such as webhook deliveries. One
   * statement; the user's role is read in it.
   */
  projectsVisibleTo(executor: Executor, organizationId: string, userId: string, projectIds: readonly string[]): Promise<Set<string>>
  /**
   * The projects the caller can view now (`among`: only those of these ids; unknown or invisible
   * ones are simply left out), for a list over all of them, in one statement whose cost grows with
   * the caller's memberships and their teams' links, never with the projects they cannot see (a
   * superadministrator sees every project of the organization). With the version a cached page
   * of such a list is keyed on: which projects they are, each one's list version and the
   * organization's (`ListCache.page`), so a change to any of them, or to who sees them, moves it.
   */
  viewableProjects(actor: Actor, among?: readonly string[]): Promise<ViewableProjects>
}

/** The projects a caller can view (ProjectAccessService.viewableProjects). */
export interface ViewableProjects {
  /** How many. */
  count: number
  /** Their ids as a subquery of one column `id`, values bound, every table named in the caller's organization. */
  ids: SQL
  /** The cached pages' version of a list over them. */
  version: string
}

export const ProjectAccessRef = serviceRef<ProjectAccessService>('projects.access', 'projects')
