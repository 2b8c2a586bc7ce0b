/**
 * How the push plugin reaches FCM. Normally from credentials on disk; an embedder (or a test)
 * can provide these options before start-up, e.g. a credential that needs no OAuth round trip.
 */
import type { Credential } from 'firebase-admin/app'
import type { Transaction } from '../../src/db'
import { serviceRef } from '../../src/services/registry'

export interface FcmOptions {
  credential: Credential
  projectId: string
}

export const FcmOptionsRef = serviceRef<FcmOptions>('push.fcm-options', 'push')

/** TLS options for the Web Push connections (an embedder's, or a test's: the CA of a local push service). */
export const WebPushAgentRef = serviceRef<{ ca?: string | Buffer | Array<string | Buffer> }>('push.webpush-agent', 'push')

/** A push to a page's audience that is not a display call (an alert's transition). */
export interface PageNotice {
  organizationId: string
  pageId: string
  pageName: string
  title: string
  body: string
  critical?: boolean
  /** Replaces an earlier notice with the same key on a device that has not shown it. */
  collapseKey?: string
}

/** How another plugin pushes to a page's audience: recorded in its own transaction, sent by the outbox. */
export interface PageNotifier {
  /**
   * Records the message and one delivery per device of the page's audience (as POST /api/message
   * does, muted pages respected) in `tx`; call `dispatched()` once `tx` has committed.
   */
  notify(tx: Transaction, notice: PageNotice): Promise<{ messageId: string; targeted: number }>
  /** Wakes the outbox on every instance (after the notices' transaction committed). */
  dispatched(): void
}

export const PageNotifierRef = serviceRef<PageNotifier>('push.page-notifier', 'push')
