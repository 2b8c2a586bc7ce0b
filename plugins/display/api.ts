/**
 * The `display` plugin's public face: what other plugins (the account area, push) and tests may
 * use — display accounts, charged display calls on a page (the seam `POST /api/message` is built
 * on), page visibility, components' data changes (DisplayUpdatesRef), the fragment cache. The
 * display API's convention (answers, OpenAPI pieces) is the core's kit, src/http/display-api. Push
 * reads a page's audience through the read model `page_viewers`, alerts components' values through
 * `component_values` (schema.ts). No SQL text crosses it: displayCallStatement gives the
 * benchmarks a lone call's statement ready to run.
 */
import type { Transaction } from '../../src/db'
import type { DisplayError, Outcome, Refusal } from '../../src/http/display-api'
import type { Actor } from '../../src/services/identity'
import { serviceRef } from '../../src/services/registry'
import type { DisplayAccounts } from './calls/accounts'

export { displayCallStatement, type ComponentWrite, type RunnableStatement } from './calls/decision'

/**
 * A user's display account: its summary and key rotation (the account area), and its creation
 * with a daily limit (what the user-creation hook does; the benchmarks seed accounts with it).
 */
export { createDisplayAccount, type DisplayAccounts, type DisplayAccountSummary } from './calls/accounts'

export const DisplayAccountsRef = serviceRef<DisplayAccounts>('display.accounts', 'display')

/** The page a charged display call acts on, and who called. */
export interface PageCall {
  organizationId: string
  pageId: string
  /** The page's name as stored. */
  pageName: string
  /** The display account's user. */
  userId: string
}

/**
 * What a caller does on the page once its call is charged and allowed: its own statements on
 * `tx`, the call's transaction (they commit with the charge, or nothing does), each naming
 * `page.organizationId` (on Citus, the call's shard).
 */
export type PageEffect<R> = (tx: Transaction, page: PageCall) => Promise<R>

/** The charged, limit-checked display call, owned by display (`POST /api/component`) and used by push (`POST /api/message`). */
export interface DisplayCalls {
  /** The body's display key, hashed, or the refusal (400 not an object or no apiKey, 401 a malformed key). */
  keyOf(body: unknown): { keyHash: string } | Refusal
  /** A valid key's call whose body was refused: charged and 400 with `problem` (or 429 / 401), grouped with the calls waiting beside it. */
  refuseCharged(keyHash: string, problem: DisplayError): Promise<Refusal>
  /**
   * A charged call acting on the page named `pageName` (any case), allowed only to its editors:
   * the call's statement and then `effect`, in one transaction. Refused 401, 429, 404
   * pageNotFound or 403 readOnlyAccess, each charged as the display API charges (and `effect` not
   * run); otherwise what `effect` returned.
   */
  onPage<R>(keyHash: string, pageName: string, effect: PageEffect<R>): Promise<Outcome<{ result: R }>>
  /** This instance's display call statements so far: how many, the calls (`items`) they carried, those that went in groups, those a refused group ran again alone. */
  groupStats(): { statements: number; items: number; grouped: number; retried: number }
}

export const DisplayCallsRef = serviceRef<DisplayCalls>('display.calls', 'display')

export interface DisplayPages {
  /** The page if the actor may see it; 404 otherwise (unknown, elsewhere, or invisible). */
  requireVisible(actor: Actor, pageId: string): Promise<{ id: string; name: string }>
  /** The page if the actor may feed it (creator, administrator, editor); 404 if they cannot see it, 403 if they only view it. */
  requireEditable(actor: Actor, pageId: string): Promise<{ id: string; name: string }>
}

export const DisplayPagesRef = serviceRef<DisplayPages>('display.pages', 'display')

/** A component whose data a display call changed: its organization, page and id. */
export interface ComponentChange {
  organizationId: string
  pageId: string
  componentId: string
}

/**
 * Components' data changes made on this instance (POST /api/component), told after they
 * committed, in batches (display collects them for ~25 ms). A listener must not throw or block:
 * it starts its own work. Changes made on other instances are told there, not here.
 */
export interface DisplayUpdates {
  /** Calls `listener` with every batch; returns its removal. */
  onComponentsChanged(listener: (changes: ComponentChange[]) => void): () => void
}

export const DisplayUpdatesRef = serviceRef<DisplayUpdates>('display.updates', 'display')

export interface FragmentCacheStats {
  entries: number
  /** Bytes held (UTF-8). */
  bytes: number
  maxBytes: number
  hits: number
  /** Fragments rendered since start (cache misses). */
  renders: number
}

/** The live pages' SVG fragment cache, for operators (metrics) and tests. */
export const FragmentCacheRef = serviceRef<{ stats(): FragmentCacheStats }>('display.fragments', 'display')

/** A mark on a component of the live page (an alert firing): a short text on the component, a longer one on hover. */
export interface ComponentMark {
  componentId: string
  /** What kind of mark: `alert` is drawn in the warning colour. */
  tone: 'alert' | 'info'
  /** Shown on the component (`⚠ above 90`). */
  text: string
  /** Shown on hover (`Firing since 07:01 UTC`). */
  detail?: string
}

/** What other plugins add to the live pages. */
export interface LivePageExtensions {
  /** A same-origin script path, loaded deferred after the page's own, on a signed-in view (not shared links): the page's CSP allows only 'self'. */
  addScript(src: string): void
  /**
   * Marks on a page's components, on every view (signed in, shared, kiosk): `read` gives the
   * page's marks (one statement naming the organization, on its shard); it is called when the page
   * is drawn and, on each instance with viewers of the page, after `marksChanged`.
   */
  addMarks(read: (organizationId: string, pageId: string) => Promise<ComponentMark[]>): void
  /** The page's marks change in `tx`: when it commits, the page's live viewers on every instance get them again. */
  marksChanged(tx: Transaction, pageId: string): Promise<void>
}

export const LivePageExtensionsRef = serviceRef<LivePageExtensions>('display.live-page', 'display')

/** A component as its feeder sees it. */
export interface FedComponent {
  id: string
  pageId: string
  type: string
  title: string | null
  /** The plugin feeding it (`work`), or null: display calls feed it. */
  feed: string | null
  feedLabel: string | null
}

/**
 * Components fed by a plugin instead of display calls (work sources): display calls to them are
 * 409 componentBound, their data is written by the feeder and drawn like any other.
 */
export interface ComponentFeeds {
  /** The component of a page the actor sees (404: the page or the component is not theirs to see). */
  visible(actor: Actor, pageId: string, componentId: string): Promise<FedComponent>
  /** The component of a page the actor may edit, locked in `tx` (404 as `visible`, 403 for the page's viewers). */
  editable(tx: Transaction, actor: Actor, pageId: string, componentId: string): Promise<FedComponent>
  /** Marks the component fed by `feed.name` (drawn with `feed.label` under its title), or fed by display calls again (null), in `tx`. */
  setFeed(tx: Transaction, organizationId: string, componentId: string, feed: { name: string; label: string } | null): Promise<void>
  /**
   * Replaces the data of a component `feed` feeds (its type's data, checked), stamped now, in `tx`:
   * its page, or undefined when it is gone, fed otherwise or of another type. Call `changed` once `tx` commits.
   */
  write(tx: Transaction, organizationId: string, componentId: string, feed: string, data: { type: string } & Record<string, unknown>): Promise<string | undefined>
  /** Tells live viewers on every instance, and this instance's listeners (alerts), that the component's data changed (after the commit). */
  changed(organizationId: string, pageId: string, componentId: string): void
}

export const ComponentFeedsRef = serviceRef<ComponentFeeds>('display.feeds', 'display')
