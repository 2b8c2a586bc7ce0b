/**
 * The event bus plugins share: PostgreSQL NOTIFY carries an event to every instance (in-process
 * on PGlite), and publishing inside a transaction delivers only if that transaction commits.
 */
import { notify, type DatabaseHandle, type Executor } from './db'

export type EventHandler = (payload: any) => void

export interface EventBus {
  /** Publishes `payload` (JSON, under 8000 bytes) on `channel`, in `executor`'s transaction if any. */
  publish(executor: Executor, channel: string, payload: unknown): Promise<void>
  /**
   * Calls `handler` for every event on `channel` from any instance; `onResync` runs when events
   * may have been missed (the listening connection was re-established).
   */
  subscribe(channel: string, handler: EventHandler, onResync?: () => void): Promise<() => Promise<void>>
  /**
   * Delivers `payload` to this instance's handlers now. Call it after the publishing transaction
   * committed, so this instance acts before its next request rather than when the NOTIFY lands.
   */
  emitLocally(channel: string, payload: unknown): void
  close(): Promise<void>
}

interface Channel {
  handlers: Set<EventHandler>
  resyncs: Set<() => void>
  unlisten: Promise<() => Promise<void>>
}

const CHANNEL_NAME = /^[a-z_][a-z0-9_]{0,62}$/

/** Creates the bus over the database's LISTEN/NOTIFY; one LISTEN per channel per instance. */
export function createEventBus(handle: DatabaseHandle, log: (message: string) => void): EventBus {
  const channels = new Map<string, Channel>()
  const deliver = (entry: Channel, channel: string, payload: unknown) => {
    for (const handler of entry.handlers) {
      try {
        handler(payload)
      } catch (error) {
        log(`event bus: a "${channel}" handler failed: ${(error as Error).message}`)
      }
    }
  }

  return {
    async publish(executor, channel, payload) {
      await notify(executor, channel, JSON.stringify(payload))
    },
    async subscribe(channel, handler, onResync) {
      if (!CHANNEL_NAME.test(channel)) throw new Error(`invalid event channel name "${channel}"`)
      let entry = channels.get(channel)
      if (!entry) {
        const created: Channel = { handlers: new Set(), resyncs: new Set(), unlisten: Promise.resolve(async () => {}) }
        created.unlisten = handle.listen(
          channel,
          (raw) => {
            let payload: unknown
            try {
              payload = JSON.parse(raw)
            } catch {
              return log(`event bus: ignored a malformed event on "${channel}"`)
            }
            deliver(created, channel, payload)
          },
          () => created.resyncs.forEach((resync) => resync()),
        )
        channels.set(channel, created)
        entry = created
      }
      entry.handlers.add(handler)
      if (onResync) entry.resyncs.add(onResync)
      await entry.unlisten
      const subscribed = entry
      return async () => {
        subscribed.handlers.delete(handler)
        if (onResync) subscribed.resyncs.delete(onResync)
      }
    },
    emitLocally(channel, payload) {
      const entry = channels.get(channel)
      if (entry) deliver(entry, channel, payload)
    },
    async close() {
      for (const entry of channels.values()) await (await entry.unlisten)().catch(() => {})
      channels.clear()
    },
  }
}
