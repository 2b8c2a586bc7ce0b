/**
 * Models of the display API: the five component data shapes of the display API (every field required,
 * unknown fields refused) and the management resources of API v1.
 */
import { Type, type Static } from '@sinclair/typebox'
import { t } from 'elysia'
import { Timestamp, UuidString } from '../../src/http/models'
import { COMPONENT_TYPES, PAGE_LEVELS } from './schema'

/** Display keys: `dpk_` + 36 base62 characters + a 6-character checksum. */
export const DISPLAY_KEY_PREFIX = 'dpk'
/** The latest accepted `timestamp`: 9999-12-31T23:59:59.999Z in milliseconds. */
export const MAX_TIMESTAMP_MS = 253_402_300_799_999

const MAX_POINTS = 1000
const MAX_TEXT = 1000

const HEX_PATTERN = '^#([0-9a-fA-F]{3}|[0-9a-fA-F]{4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$'
const Hex = Type.String({ pattern: HEX_PATTERN, description: '# and 3, 4, 6 or 8 hex digits' })
const strict = { additionalProperties: false } as const

const Text = Type.Object(
  {
    value: Type.String({ maxLength: MAX_TEXT }),
    size: Type.Integer({ minimum: 1, maximum: 512 }),
    color: Hex,
  },
  strict,
)
const Point = Type.Object({ x: Type.String({ maxLength: 200 }), y: Type.Number(), color: Hex }, strict)
const PiePoint = Type.Object({ x: Type.String({ maxLength: 200 }), y: Type.Number(), color: Type.Union([Hex, Type.Literal('')]) }, strict)
const points = <T extends typeof Point | typeof PiePoint>(point: T) => Type.Array(point, { maxItems: MAX_POINTS })
/** A chart's own height: pixels of its drawing, not the grid rows its cell spans (the component's `height` in API v1). */
const ChartHeight = Type.Integer({
  minimum: 1,
  maximum: 4096,
  description: "The chart's drawing height in pixels (1..4096), inside its cell; not the grid rows the cell spans (API v1's component `height`).",
})
const XNumber = Type.Boolean({
  description: 'true: the x values are numbers (points sorted by x and placed by value, numeric ticks); false: text labels in equal slots, in posted order. A numeric axis with any non-numeric x is drawn as text.',
})
/** Optional (the seed's data has no such field): a posted update without it shows numbers compact. */
const Format = Type.Optional(
  Type.Union([Type.Literal('compact'), Type.Literal('exact')], {
    description:
      'How numbers are written: `compact` (the default: "51990" shows as "52k") or `exact` (every digit, grouped: "51,990"). Applies to box texts that are plain numbers, bar value labels, pie legend values and the aria summary; axis ticks and tooltips keep their own forms.',
  }),
)

export const ComponentData = {
  horizontalBox: Type.Object(
    { type: Type.Literal('horizontalBox'), backgroundColor: Hex, leftText: Text, middleText: Text, rightText: Text, format: Format },
    strict,
  ),
  verticalBox: Type.Object({ type: Type.Literal('verticalBox'), backgroundColor: Hex, topText: Text, bottomText: Text, format: Format }, strict),
  barChart: Type.Object(
    { type: Type.Literal('barChart'), backgroundColor: Hex, xNumber: XNumber, height: ChartHeight, points: points(Point), format: Format },
    strict,
  ),
  lineChart: Type.Object(
    {
      type: Type.Literal('lineChart'),
      backgroundColor: Hex,
      cubic: Type.Boolean({
        description: 'true: a smooth monotone cubic curve through the points (it never rises above or dips below the two points it joins); false: straight segments.',
      }),
      xNumber: XNumber,
      fillColor: Type.String({ pattern: HEX_PATTERN, description: 'Fill of the area between the line and the zero line (drawn at 35 % opacity): # and 3, 4, 6 or 8 hex digits.' }),
      height: ChartHeight,
      points: points(Point),
      format: Format,
    },
    strict,
  ),
  pieChart: Type.Object({ type: Type.Literal('pieChart'), backgroundColor: Hex, height: ChartHeight, points: points(PiePoint), format: Format }, strict),
}

/** A component type: the key of its data's schema in ComponentData. */
export type ComponentType = keyof typeof ComponentData

/** The data of a component of type `T`, as the display API admits it. */
export type ComponentDataOf<T extends ComponentType> = Static<(typeof ComponentData)[T]>

/** A component's data: the union of the five shapes, told apart by `type`. */
export type ComponentData = { [T in ComponentType]: ComponentDataOf<T> }[ComponentType]

/** The envelope of `POST /api/component`, before `data` is checked against its own type. */
export const ComponentUpdate = Type.Object(
  {
    componentId: Type.String({ maxLength: 100 }),
    apiKey: Type.String({ maxLength: 100 }),
    // At most the last millisecond of 9999: a timestamp far in the future (1e300) would make every later update stale.
    timestamp: Type.Number({ minimum: 0, maximum: MAX_TIMESTAMP_MS, description: 'Unix seconds (fractional allowed); above 10^11 it is read as milliseconds; at most 253402300799999 (9999-12-31T23:59:59.999Z in milliseconds).' }),
    data: Type.Object({ type: Type.String() }),
  },
  strict,
)

// ---- API v1 management -----------------------------------------------------------------------

export const PAGE_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$'

export const Page = t.Object(
  {
    id: UuidString(),
    name: t.String(),
    title: t.Union([t.String(), t.Null()]),
    createdBy: t.Union([UuidString(), t.Null()]),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'Page' },
)

export const PageInput = t.Object(
  {
    name: t.String({ pattern: PAGE_NAME_PATTERN, description: 'Letters, digits, ".", "_" and "-", 1..100; unique in the organization (any case).' }),
    title: t.Optional(t.Union([t.String({ maxLength: 200 }), t.Null()])),
  },
  { additionalProperties: false },
)

export const PagePatch = t.Object(
  { name: t.Optional(t.String({ pattern: PAGE_NAME_PATTERN })), title: t.Optional(t.Union([t.String({ maxLength: 200 }), t.Null()])) },
  { additionalProperties: false, minProperties: 1 },
)

const PageLevel = t.Union(PAGE_LEVELS.map((level) => t.Literal(level)), {
  description: '`viewer` (default) sees the page and receives its messages; `editor` also feeds it through the display API.',
})

export const PageAccessEntry = t.Object(
  {
    principalType: t.Union([t.Literal('user'), t.Literal('team')]),
    principalId: UuidString(),
    name: t.String({ description: 'The username or the team name.' }),
    level: PageLevel,
    createdAt: Timestamp(),
  },
  { title: 'PageAccess' },
)

/** `{userId}` or `{teamId}` (exactly one; checked by the service, which names the field), and a level. */
export const PageAccessInput = t.Object(
  {
    userId: t.Optional(UuidString({ description: 'A user of your organization (give this or teamId).' })),
    teamId: t.Optional(UuidString({ description: 'A team of your organization (give this or userId).' })),
    level: t.Optional(PageLevel),
  },
  { additionalProperties: false },
)

export const PageAccessPatch = t.Object({ level: PageLevel }, { additionalProperties: false })

const Position = {
  x: t.Optional(Type.Integer({ minimum: 0, maximum: 23, description: 'Grid column (0..23).' })),
  y: t.Optional(Type.Integer({ minimum: 0, maximum: 10_000, description: 'Grid row.' })),
  width: t.Optional(Type.Integer({ minimum: 1, maximum: 24, description: 'Columns spanned (1..24).' })),
  height: t.Optional(Type.Integer({ minimum: 1, maximum: 48, description: "Grid rows the component's cell spans (1..48; a row is at least 40 px and grows to fit its content); not a chart's drawing height, which is `data.height` in pixels." })),
}

export const Component = t.Object(
  {
    id: UuidString({ description: 'The componentId of POST /api/component.' }),
    pageId: UuidString(),
    type: t.Union(COMPONENT_TYPES.map((type) => t.Literal(type))),
    title: t.Union([t.String(), t.Null()]),
    x: t.Integer(),
    y: t.Integer(),
    width: t.Integer(),
    height: t.Integer({ description: "Grid rows the component's cell spans; a chart's drawing height in pixels is `data.height`." }),
    data: t.Union([t.Record(t.String(), t.Unknown()), t.Null()], { description: 'The last accepted data, as posted.' }),
    timestamp: t.Union([t.Number(), t.Null()], { description: 'Unix seconds of the last accepted update.' }),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'Component' },
)

export const ComponentInput = t.Object(
  { type: t.Union(COMPONENT_TYPES.map((type) => t.Literal(type))), title: t.Optional(t.Union([t.String({ maxLength: 200 }), t.Null()])), ...Position },
  { additionalProperties: false },
)

export const ComponentPatch = t.Object(
  { title: t.Optional(t.Union([t.String({ maxLength: 200 }), t.Null()])), ...Position },
  { additionalProperties: false, minProperties: 1 },
)

export const ShareLink = t.Object(
  {
    id: UuidString(),
    pageId: UuidString(),
    prefix: t.String({ description: 'The first 8 characters of the token (`dsl_…`), to tell links apart.' }),
    createdBy: t.Union([UuidString(), t.Null()]),
    createdAt: Timestamp(),
    expiresAt: t.Union([Timestamp(), t.Null()], { description: 'When the link stops working; null: until revoked.' }),
  },
  { title: 'ShareLink' },
)

export const CreatedShareLink = t.Composite(
  [ShareLink, t.Object({ url: t.String({ description: 'The link, `/s/<token>` on this service: shown in this answer only (the token is stored hashed).' }) })],
  { title: 'CreatedShareLink' },
)

export const ShareLinkInput = t.Object(
  { expiresAt: t.Optional(t.Union([t.String({ format: 'date-time', description: 'When the link stops working (in the future); omit or null: until revoked.' }), t.Null()])) },
  { additionalProperties: false },
)

export type PageInput = typeof PageInput.static
export type PageAccessInput = typeof PageAccessInput.static
export type PagePatch = typeof PagePatch.static
export type ComponentInput = typeof ComponentInput.static
export type ComponentPatch = typeof ComponentPatch.static
export type ShareLinkInput = typeof ShareLinkInput.static
