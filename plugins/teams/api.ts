/**
 * The `teams` plugin's public face: the teams of an organization as other plugins may look them
 * up (projects links, display access lists), and the membership losses they react to. Their SQL
 * reads teams only through the read models `team_directory` and `team_memberships` (schema.ts).
 */
import type { Executor } from '../../src/db'
import { serviceRef } from '../../src/services/registry'

/** A team as other plugins see it. */
export interface TeamRecord {
  id: string
  organizationId: string
  name: string
  description: string | null
  createdAt: Date
  updatedAt: Date
}

export interface TeamDirectory {
  /** The team of the organization (locked `for update` with `lock`), or undefined, also for an id that is no UUID. */
  find(executor: Executor, organizationId: string, teamId: string, lock?: boolean): Promise<TeamRecord | undefined>
}

export const TeamDirectoryRef = serviceRef<TeamDirectory>('teams.directory', 'teams')

/** A user left a team (`userId`), or the team was deleted with all its members (no `userId`). */
export interface TeamMembershipLoss {
  teamId: string
  userId?: string
}

export interface TeamEvents {
  /**
   * Calls `listener` after a membership loss commits on any instance; `onResync` runs when such
   * news may have been missed (the listening connection was re-established).
   */
  onMembershipLost(listener: (loss: TeamMembershipLoss) => void, onResync?: () => void): Promise<void>
}

export const TeamEventsRef = serviceRef<TeamEvents>('teams.events', 'teams')
