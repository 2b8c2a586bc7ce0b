/** What the `teams` plugin tells others about membership (display closes live streams with it). */
import { serviceRef } from './registry'

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
