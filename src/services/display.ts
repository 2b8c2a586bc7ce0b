/** The display account of a user (provided by the `display` plugin, shown by the account area). */
import type { AuditActor } from '../audit'
import { serviceRef } from './registry'

export interface DisplayAccountSummary {
  /** The first 8 characters of the `dpk_…` key; null for a user who has no display account yet. */
  prefix: string | null
  dailyLimit: number
  usedToday: number
  /** Next UTC midnight, when the count starts again. */
  resetsAt: string
}

export interface DisplayAccounts {
  summary(userId: string): Promise<DisplayAccountSummary>
  /** Replaces the key (creating the account if needed): the new secret is returned once and the old one stops at once. */
  rotate(actor: AuditActor, userId: string): Promise<{ apiKey: string; prefix: string }>
}

export const DisplayAccountsRef = serviceRef<DisplayAccounts>('display.accounts', 'display')
