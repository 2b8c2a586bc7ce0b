/** The components the display API changed, told to live viewers and to other plugins once committed. */
import { queryText, type Database } from '../../../src/db'
import type { ComponentChange } from '../api'
import { DISPLAY_CHANNEL } from '../pages/channels'

/** Changes one NOTIFY carries: 70 of 103 bytes each, within PostgreSQL's 8,000-byte payload (a work source's rebuild across an organization changes more at once). */
export const CHANGES_PER_NOTIFY = 70

/**
 * Tells live viewers on every instance which components changed: collected for a few
 * milliseconds and sent as one NOTIFY after the updates committed. (A NOTIFY inside each update
 * cost 35–45 % of the update throughput: PostgreSQL serialises notifying commits.) The same batch
 * goes to this instance's listeners (other plugins, through `DisplayUpdatesRef`), which cost the
 * update path nothing: they run after the batch is handed over, never inside an update.
 */
export class ChangeNotifier {
  private pending = new Map<string, ComponentChange>()
  private timer: ReturnType<typeof setTimeout> | undefined
  private readonly listeners = new Set<(changes: ComponentChange[]) => void>()

  constructor(
    private readonly db: Database,
    private readonly onError: (error: Error) => void,
    private readonly delayMs = 25,
  ) {}

  changed(organizationId: string, pageId: string, componentId: string): void {
    this.pending.set(componentId, { organizationId, pageId, componentId })
    this.timer ??= setTimeout(() => void this.flush(), this.delayMs)
  }

  /** Calls `listener` with every batch of changed components made on this instance, after they committed; returns its removal. */
  listen(listener: (changes: ComponentChange[]) => void): () => void {
    this.listeners.add(listener)
    return () => void this.listeners.delete(listener)
  }

  async flush(): Promise<void> {
    this.timer = undefined
    const changes = [...this.pending.values()]
    this.pending = new Map()
    if (!changes.length) return
    for (const listener of this.listeners) {
      try {
        listener(changes)
      } catch (error) {
        this.onError(error as Error)
      }
    }
    // NOTIFY payloads stop at 8000 bytes: a change takes 103 (live viewers need no organization), so 77 fit.
    const viewed = changes.map(({ pageId, componentId }) => ({ pageId, componentId }))
    for (let i = 0; i < viewed.length; i += CHANGES_PER_NOTIFY)
      await queryText(this.db, 'select pg_notify($1, $2)', [DISPLAY_CHANNEL, JSON.stringify(viewed.slice(i, i + CHANGES_PER_NOTIFY))]).catch(this.onError)
  }

  stop(): Promise<void> {
    clearTimeout(this.timer)
    return this.flush()
  }
}
