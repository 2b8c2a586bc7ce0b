/**
 * The `display` plugin's public face: what other plugins (the account area, push) and tests may
 * use. Everything else of the plugin is its own.
 */
import type { AuditActor } from '../../src/audit'
import { serviceRef } from '../../src/services/registry'

export interface DisplayAccountSummary {
  /** The first 8 characters of the `dpk_…` key; null for a user who has no display account yet. */
  prefix: string | null
  dailyLimit: number
  usedToday: number
  /** Next UTC midnight, when the count starts again. */
  resetsAt: string
}

/** The display account of a user (shown and rotated by the account area). */
export interface DisplayAccounts {
  summary(userId: string): Promise<DisplayAccountSummary>
  /** Replaces the key (creating the account if needed): the new secret is returned once and the old one stops at once. */
  rotate(actor: AuditActor, userId: string): Promise<{ apiKey: string; prefix: string }>
}

export const DisplayAccountsRef = serviceRef<DisplayAccounts>('display.accounts', 'display')

export interface FragmentCacheStats {
  entries: number
  /** Approximate bytes held (UTF-16). */
  bytes: number
  maxBytes: number
  hits: number
  /** Fragments rendered since start (cache misses). */
  renders: number
}

/** The live pages' SVG fragment cache, for operators (metrics) and tests. */
export const FragmentCacheRef = serviceRef<{ stats(): FragmentCacheStats }>('display.fragments', 'display')
