/**
 * The log sender (`push.sender: "log"`), for development without a Firebase project: each push
 * is written to the service log as the FCM message the FCM sender would send, and recorded `sent`
 * (the outbox did all it would do; only the last hop is a log line). Nothing leaves the process.
 */
import type { Logger } from '../../src/log'
import { fcmMessage, type OutgoingPush, type PushResult, type PushSender } from './fcm'

/** The log line of each push; its `fcmMessage` field is the message as FCM would receive it. */
export const LOG_SENDER_LINE = 'push: not sent to FCM (push.sender is "log"); the FCM message'

export class LogSender implements PushSender {
  constructor(private readonly log: Logger) {}

  /** One info line per push, then every push `sent`. */
  async send(pushes: OutgoingPush[]): Promise<PushResult[]> {
    for (const push of pushes) this.log.info(LOG_SENDER_LINE, { fcmMessage: fcmMessage(push) })
    return pushes.map(() => ({ outcome: 'sent' }))
  }

  async close(): Promise<void> {}
}
