/** API v1 models of alert rules and their history. */
import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { Timestamp, UuidString } from '../../src/http/models'

/** The longest `forSeconds` of an `above`/`below` rule (a day) and of a `noData` rule (a week), and a `noData` rule's shortest (a minute). */
export const MAX_HOLD_SECONDS = 86_400
export const MAX_NO_DATA_SECONDS = 604_800
export const MIN_NO_DATA_SECONDS = 60

const When = t.Union([t.Literal('above'), t.Literal('below'), t.Literal('noData')], {
  description: '`above` / `below`: the component\'s value is above / below `value`; `noData`: its data is older than `forSeconds`.',
})

export const Alert = t.Object(
  {
    id: UuidString(),
    pageId: UuidString(),
    componentId: UuidString(),
    when: When,
    value: t.Union([t.Number(), t.Null()], { description: 'The threshold of `above` / `below`; null for `noData`.' }),
    forSeconds: t.Integer({ description: 'How long the condition must hold before the rule fires (`noData`: how old the data must be).' }),
    state: t.Union([t.Literal('ok'), t.Literal('firing')], { description: '`firing` from the moment it fired until it resolves.' }),
    pendingSince: t.Union([Timestamp(), t.Null()], { description: 'Since when the condition has held while the rule waits out `forSeconds`; null otherwise.' }),
    createdBy: t.Union([UuidString(), t.Null()]),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'ComponentAlert' },
)

const Threshold = Type.Number({ description: 'The threshold (`above` / `below` only).' })
const ForSeconds = Type.Integer({
  minimum: 0,
  maximum: MAX_NO_DATA_SECONDS,
  description: `\`above\` / \`below\`: 0..${MAX_HOLD_SECONDS} (default 0: at once); \`noData\`: ${MIN_NO_DATA_SECONDS}..${MAX_NO_DATA_SECONDS}, required.`,
})

/** Checked as one object; the rules between its fields (which need `value`, the ranges of `forSeconds`) by the service, naming the field. */
export const AlertInput = t.Object({ when: When, value: t.Optional(Threshold), forSeconds: t.Optional(ForSeconds) }, { additionalProperties: false })

export const AlertPatch = t.Object(
  { when: t.Optional(When), value: t.Optional(Threshold), forSeconds: t.Optional(ForSeconds) },
  { additionalProperties: false, minProperties: 1 },
)

export const AlertTransition = t.Object(
  {
    transition: t.Union([t.Literal('fired'), t.Literal('resolved')]),
    value: t.Union([t.Number(), t.Null()], { description: "The component's value when it happened (null: none)." }),
    at: Timestamp(),
  },
  { title: 'ComponentAlertTransition' },
)

export type AlertInput = typeof AlertInput.static
export type AlertPatch = typeof AlertPatch.static
export type AlertView = typeof Alert.static
