/**
 * What each reason does for a user: `push` (the thread update is pushed to their devices),
 * `inbox` (the thread only) or `off` (no thread). Defaults: `assigned` and `mentioned` push, the
 * rest `inbox`. Kept as two bit masks per user in `work_notification_settings` and shown as the
 * `work` section of `GET/PUT /api/v1/users/me/notifications` (the push plugin's route): the fan-out
 * reads the masks in the statement that finds who a change concerns.
 */
import { Type, type Static } from '@sinclair/typebox'
import { queryText, type Executor, type Transaction } from '../../src/db'
import type { Actor } from '../../src/services/identity'
import type { PreferenceSection } from '../push/api'
import { REASON_BIT, REASONS, type Reason } from './reasons'

export const DEFAULT_PUSH = REASON_BIT.assigned | REASON_BIT.mentioned

const Choice = (reason: Reason, fallback: string) =>
  Type.Union([Type.Literal('push'), Type.Literal('inbox'), Type.Literal('off')], {
    description: `What a thread update for \`${reason}\` does: \`push\` (to every device of yours, quiet hours applied), \`inbox\` (the thread only) or \`off\` (no thread). Default \`${fallback}\`.`,
  })

export const WorkPreferences = Type.Object(
  Object.fromEntries(REASONS.map((reason) => [reason, Choice(reason, DEFAULT_PUSH & REASON_BIT[reason] ? 'push' : 'inbox')])) as Record<Reason, ReturnType<typeof Choice>>,
  { additionalProperties: false, title: 'WorkNotificationPreferences', description: 'Notifications about your work, per reason.' },
)
export type WorkPreferencesValue = Static<typeof WorkPreferences>

interface Masks {
  push: number
  off: number
}

const choiceOf = (masks: Masks, reason: Reason) => (masks.off & REASON_BIT[reason] ? 'off' : masks.push & REASON_BIT[reason] ? 'push' : 'inbox')

async function readMasks(executor: Executor, actor: Actor): Promise<Masks> {
  const [row] = await queryText<{ push: number; off: number }>(
    executor,
    'select push_reasons as push, off_reasons as off from work_notification_settings where user_id = $1 and organization_id = $2',
    [actor.userId, actor.organizationId],
  )
  return row ? { push: Number(row.push), off: Number(row.off) } : { push: DEFAULT_PUSH, off: 0 }
}

export const workPreferenceSection: PreferenceSection<WorkPreferencesValue> = {
  key: 'work',
  schema: WorkPreferences,
  async read(executor, actor) {
    const masks = await readMasks(executor, actor)
    return Object.fromEntries(REASONS.map((reason) => [reason, choiceOf(masks, reason)])) as WorkPreferencesValue
  },
  async write(tx: Transaction, actor, value) {
    const masks = await readMasks(tx, actor)
    for (const reason of REASONS) {
      const choice = value[reason]
      if (choice === undefined) continue
      const bit = REASON_BIT[reason]
      masks.push = choice === 'push' ? masks.push | bit : masks.push & ~bit
      masks.off = choice === 'off' ? masks.off | bit : masks.off & ~bit
    }
    await queryText(
      tx,
      `insert into work_notification_settings (user_id, organization_id, push_reasons, off_reasons, updated_at) values ($1, $2, $3, $4, $5::timestamptz)
        on conflict (user_id, organization_id) do update set push_reasons = excluded.push_reasons, off_reasons = excluded.off_reasons, updated_at = excluded.updated_at`,
      [actor.userId, actor.organizationId, masks.push, masks.off, new Date().toISOString()],
    )
  },
}
