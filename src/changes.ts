/**
 * The change feed: resource plugins record what changed (`work_item.updated` and the resource as
 * API v1 shows it) inside the transaction of the change; observers (the webhooks plugin's outbox)
 * run in that same transaction, so what they write commits or rolls back with the change. Event
 * types are declared in plugin manifests (`events`), which is how an observer learns what exists
 * without depending on the plugins that emit them.
 */
import type { AuditActor } from './audit'
import type { CountTable } from './counts'
import type { Transaction } from './db'

/** An event type a plugin emits, e.g. `work_item.created`. */
export interface EventTypeDefinition {
  name: string
  description: string
}

/** What a plugin records about one change. */
export interface RecordedChange {
  /** A declared event type. */
  type: string
  /** The project the change belongs to (every work-tracking change has one). */
  projectId: string | null
  /**
   * The resource as API v1 returns it, after the change (before it for a delete); a function when
   * it costs a read, called only if an observer wants the event.
   */
  data: unknown | (() => Promise<unknown>)
  /** For an update: the old values of the fields that changed, and only those. */
  previous?: Record<string, unknown>
}

/** A change as observers see it. */
export interface ChangeEvent {
  type: string
  organizationId: string
  projectId: string | null
  actor: { userId: string | null; via: string }
  /** Reads (or returns) the resource; call it only if the event is wanted. */
  data(): Promise<unknown>
  /** For an update: the old values of the fields that changed. */
  previous?: Record<string, unknown>
}

/**
 * Runs inside the change's transaction. `wants` is a cheap, synchronous pre-check (no SQL): false
 * means the observer has nothing to do with the event, and the change costs nothing more.
 */
export interface ChangeObserver {
  wants(organizationId: string, type: string, projectId: string | null): boolean
  observe(tx: Transaction, event: ChangeEvent): Promise<void>
  /**
   * Observes a batch's events (a bulk request's items, all wanted), in order, in one go: what
   * `observe` would write for each, in as few statements as it can. Without it, `observe` runs
   * for each event.
   */
  observeMany?(tx: Transaction, events: readonly ChangeEvent[]): Promise<void>
  /**
   * Runs in a deletion's transaction before the row goes (its owner has locked it, and takes no
   * other row first), for what the row takes with it: an observer removes its own rows that point
   * at it (instead of the foreign key's cascade, which no maintained count sees) and moves its
   * counts with `count` (the unit of work moves them after the audit record, src/writes.ts).
   */
  beforeDelete?(tx: Transaction, deletion: Deletion, count: CountMove): Promise<void>
}

/** A row about to be deleted: its resource type (`work_item`), id and place. */
export interface Deletion {
  resourceType: string
  id: string
  organizationId: string
  projectId: string | null
}

/** Moves maintained counts of a scope in the unit of work (src/writes.ts `Write.count`). */
export type CountMove = (counts: CountTable, scopeId: string, changes: Readonly<Record<string, number>>) => void

export interface ChangeFeed {
  /** Records a change in `tx` (call it where the change's audit record is written). */
  record(tx: Transaction, actor: AuditActor, change: RecordedChange): Promise<void>
  /** Records a batch of changes in `tx`, in order (see `ChangeObserver.observeMany`). */
  recordMany(tx: Transaction, actor: AuditActor, changes: readonly RecordedChange[]): Promise<void>
  /** Tells observers that a row is about to be deleted in `tx` (see `ChangeObserver.beforeDelete`). */
  deleting(tx: Transaction, deletion: Deletion, count: CountMove): Promise<void>
  /** Adds an observer; returns its removal. */
  observe(observer: ChangeObserver): () => void
  /** The event types of the enabled plugins. */
  readonly types: readonly EventTypeDefinition[]
}

/** The feed of one service; `types` are the enabled plugins' declared events (a record of another type is a bug). */
export function createChangeFeed(types: readonly EventTypeDefinition[]): ChangeFeed {
  const observers = new Set<ChangeObserver>()
  const known = new Set(types.map((type) => type.name))
  return {
    types,
    observe(observer) {
      observers.add(observer)
      return () => void observers.delete(observer)
    },
    async deleting(tx, deletion, count) {
      for (const observer of observers) if (observer.beforeDelete) await observer.beforeDelete(tx, deletion, count)
    },
    async record(tx, actor, change) {
      if (!known.has(change.type)) throw new Error(`change type "${change.type}" is not declared by an enabled plugin`)
      if (observers.size === 0) return
      const event = eventOf(actor, change)
      for (const observer of observers) if (observer.wants(event.organizationId, change.type, change.projectId)) await observer.observe(tx, event)
    },
    async recordMany(tx, actor, changes) {
      for (const change of changes) if (!known.has(change.type)) throw new Error(`change type "${change.type}" is not declared by an enabled plugin`)
      if (observers.size === 0 || !changes.length) return
      const events = changes.map((change) => eventOf(actor, change))
      for (const observer of observers) {
        const wanted = events.filter((event) => observer.wants(event.organizationId, event.type, event.projectId))
        if (!wanted.length) continue
        if (observer.observeMany) await observer.observeMany(tx, wanted)
        else for (const event of wanted) await observer.observe(tx, event)
      }
    },
  }
}

/** A recorded change as observers see it: its data read (or returned) at most once. */
function eventOf(actor: AuditActor, change: RecordedChange): ChangeEvent {
  let read: Promise<unknown> | undefined
  return {
    type: change.type,
    organizationId: actor.organizationId,
    projectId: change.projectId,
    actor: { userId: actor.userId, via: actor.via },
    previous: change.previous,
    data: () => (read ??= typeof change.data === 'function' ? (change.data as () => Promise<unknown>)() : Promise.resolve(change.data)),
  }
}

/** The `created`, `updated` and `deleted` events of one resource, e.g. `crudEvents('work_item', 'a work item')`. */
export const crudEvents = (resource: string, what: string): EventTypeDefinition[] => [
  { name: `${resource}.created`, description: `${what} was created; data: the new resource.` },
  { name: `${resource}.updated`, description: `${what} was changed; data: the resource after the change; previous: the old values of the fields that changed.` },
  { name: `${resource}.deleted`, description: `${what} was deleted; data: the resource before the deletion.` },
]
