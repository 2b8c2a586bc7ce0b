/**
 * The `entries` plugin's public face: the entry model, its columns as a fragment and its mapping
 * (for plugins that read entries through the `entry_documents` read model, aliased `e`), and what
 * content order may call inside its transaction.
 */
import type { Transaction } from '../../src/db'
import { serviceRef } from '../../src/services/registry'

export { Entry, ENTRY_COLUMNS, toEntry, type EntryResource, type EntryTextRow } from './model'

export interface EntriesFace {
  /** Renumbers the organization's entries 0..n-1 in the order of `ids` (the caller holds the project's ordering lock). */
  writeOrder(tx: Transaction, organizationId: string, ids: readonly string[]): Promise<void>
}

export const EntriesRef = serviceRef<EntriesFace>('entries.face', 'entries')
