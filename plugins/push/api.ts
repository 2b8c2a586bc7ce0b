/**
 * How the push plugin reaches FCM. Normally from credentials on disk; an embedder (or a test)
 * can provide these options before start-up, e.g. a credential that needs no OAuth round trip.
 */
import type { Credential } from 'firebase-admin/app'
import { serviceRef } from '../../src/services/registry'

export interface FcmOptions {
  credential: Credential
  projectId: string
}

export const FcmOptionsRef = serviceRef<FcmOptions>('push.fcm-options', 'push')
