/**
 * How the push plugin reaches FCM. Normally from credentials on disk; an embedder (or a test)
 * can provide these options before start-up, e.g. a credential that needs no OAuth round trip.
 */
import type { TObject } from '@sinclair/typebox'
import type { Credential } from 'firebase-admin/app'
import type { Executor, Transaction } from '../../src/db'
import type { Actor } from '../../src/services/identity'
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

/** A push to one user's devices that no page sent: a notification about their work (the notifications plugin). */
export interface UserPush {
  userId: string
  /** What the devices show; null: a data-only message (nothing is shown; the app or service worker acts on `data`). */
  notification: { title: string; body: string } | null
  /** The push's `data` (string values, as FCM takes them); `messageId` and `sentAt` are added. */
  data: Record<string, string>
  /** Pushes with the same key replace each other on a device (FCM collapse key, APNs collapse id, Web Push topic). */
  collapseKey: string
  /** How long the push services keep it for an offline device; also how long quiet hours may hold it. */
  ttlSeconds: number
  /** Sent through the user's quiet hours (a data-only message that clears a notification shows nothing). */
  critical?: boolean
}

/**
 * How another plugin pushes to users (never counted against a display account's limit): recorded
 * in its own transaction, one message per push and one delivery per device of its user while the
 * user is active; the outbox sends them, quiet hours and TTL applied.
 */
export interface UserNotifier {
  /** Records the pushes of one organization in `tx`; the deliveries queued. Call `dispatched()` once `tx` has committed. */
  notify(tx: Transaction, organizationId: string, pushes: readonly UserPush[]): Promise<number>
  /** Wakes the outbox on every instance (after the pushes' transaction committed). */
  dispatched(): void
}

export const UserNotifierRef = serviceRef<UserNotifier>('push.user-notifier', 'push')

/**
 * A section another plugin adds to the caller's notification preferences
 * (`GET/PUT /api/v1/users/me/notifications`), kept in its own tables: `schema` is the section as
 * GET answers it; in a PUT the section and each of its fields are optional (what is left out stays).
 */
export interface PreferenceSection<T = unknown> {
  key: string
  schema: TObject
  read(executor: Executor, actor: Actor): Promise<T>
  /** Writes what the PUT sent of the section, in the preferences' transaction. */
  write(tx: Transaction, actor: Actor, value: Partial<T>): Promise<void>
}

export interface PreferenceSections {
  /** Adds a section; call it in setup (the routes are built after every plugin's setup). */
  add<T>(section: PreferenceSection<T>): void
}

export const PreferenceSectionsRef = serviceRef<PreferenceSections>('push.preference-sections', 'push')
