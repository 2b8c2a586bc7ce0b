/** Devices: FCM registration tokens of signed-in mobile (or web) apps, and browsers' Web Push subscriptions. */
import { queryText, type Database } from '../../src/db'
import { isoFromText } from '../../src/sql'
import { Type } from '@sinclair/typebox'
import { createHash } from 'node:crypto'

/** FCM's platforms; `webpush` is a browser's Web Push subscription, sent without FCM. */
export const FCM_PLATFORMS = ['android', 'ios', 'web'] as const
export const PLATFORMS = [...FCM_PLATFORMS, 'webpush'] as const
/** FCM tokens are ~160 URL-safe characters; anything printable without spaces, up to 4 KiB, is kept. */
const TOKEN = /^[\x21-\x7e]{1,4096}$/

export interface Device {
  token: string
  platform: (typeof PLATFORMS)[number]
  createdAt: string
  lastSeenAt: string
}

/** The body of `POST /api/devices`: checked with this schema, and documented by it. */
export const DeviceBody = Type.Object(
  {
    token: Type.String({ pattern: '^[\\x21-\\x7e]{1,4096}$', description: 'The FCM registration token: 1..4096 printable characters, no spaces.' }),
    platform: Type.Union(FCM_PLATFORMS.map((platform) => Type.Literal(platform)), { description: `One of ${FCM_PLATFORMS.join(', ')}.` }),
  },
  { title: 'DeviceInput', additionalProperties: false },
)

/** The body of `POST /api/devices` for a browser: its PushSubscription as `toJSON()` gives it. */
export const WebPushDeviceBody = Type.Object(
  {
    platform: Type.Literal('webpush'),
    subscription: Type.Object(
      {
        endpoint: Type.String({ minLength: 1, maxLength: 2000, description: "The push service's https URL for this browser; its host must resolve to public addresses." }),
        expirationTime: Type.Optional(Type.Union([Type.Number(), Type.Null()], { description: 'Ignored (browsers send it).' })),
        keys: Type.Object(
          {
            p256dh: Type.String({ minLength: 1, maxLength: 200, description: "The browser's P-256 public key, base64url." }),
            auth: Type.String({ minLength: 1, maxLength: 100, description: 'Its 16-byte authentication secret, base64url.' }),
          },
          { additionalProperties: false },
        ),
      },
      { additionalProperties: false, description: 'PushSubscription.toJSON() of the browser (Web Push, RFC 8030; encrypted per RFC 8291, signed with VAPID).' },
    ),
  },
  { title: 'WebPushDeviceInput', additionalProperties: false },
)

const PlatformModel = Type.Union(PLATFORMS.map((platform) => Type.Literal(platform)))

/** The answer of `POST /api/devices` (and of a browser's subscription): the device as registered. Documentation only. */
export const DeviceAnswer = Type.Object(
  {
    device: Type.Object(
      {
        token: Type.String({ description: "The FCM registration token, or a Web Push subscription's endpoint." }),
        platform: PlatformModel,
        createdAt: Type.String({ format: 'date-time', description: 'When this user registered it.' }),
        lastSeenAt: Type.String({ format: 'date-time', description: 'The last registration or refresh.' }),
      },
      { title: 'Device', additionalProperties: false },
    ),
  },
  { additionalProperties: false },
)

/** The answer of `GET /api/devices`. Documentation only. */
export const DeviceList = Type.Object(
  {
    devices: Type.Array(
      Type.Object(
        {
          id: Type.String({ pattern: '^[0-9a-f]{16}$', description: 'Stable while the token is registered (derived from it; not the token).' }),
          tokenSuffix: Type.String({ maxLength: 8, description: "The token's last 8 characters (at most half of a shorter token): the token itself is never listed." }),
          platform: PlatformModel,
          createdAt: Type.String({ format: 'date-time', description: 'When you registered it.' }),
          lastSeenAt: Type.String({ format: 'date-time', description: 'The last registration or refresh.' }),
        },
        { title: 'ListedDevice', additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
)

/** A device to register: an FCM token, or a Web Push endpoint with its keys. */
export interface NewDevice {
  token: string
  platform: Device['platform']
  p256dh?: string
  auth?: string
}

/**
 * Registers `token` for the user, or refreshes it: a token belongs to the user who registered it
 * last (a phone changes hands, or another account signs in on it). `created` is false for the same user's refresh.
 */
export async function registerDevice(db: Database, user: { id: string; organizationId: string }, device: NewDevice, maxDevices: number): Promise<Device & { created: boolean }> {
  const { token, platform } = device
  // A token lives in one organization at a time: registering it here takes it from any other (the
  // one statement of a registration that reads every organization: a phone's token may be anywhere).
  const { previousUserId, row } = await db.transaction(async (tx) => {
    const moved = await queryText<{ userId: string }>(tx, 'delete from devices where token = $1 and organization_id <> $2 returning user_id as "userId"', [token, user.organizationId])
    // The time is given, not read with now(): Citus refuses a function that is not IMMUTABLE in an
    // ON CONFLICT clause, a cast of a column to text in RETURNING, and a subquery in an INSERT.
    const [here] = await queryText<{ userId: string }>(tx, 'select user_id as "userId" from devices where token = $1 and organization_id = $2', [token, user.organizationId])
    const [row] = await queryText<{ token: string; platform: Device['platform']; createdAt: string; lastSeenAt: string }>(
      tx,
      `insert into devices (token, user_id, organization_id, platform, p256dh, auth) values ($1, $2, $3, $4, $6, $7)
        on conflict (token, organization_id) do update set user_id = excluded.user_id, platform = excluded.platform, p256dh = excluded.p256dh, auth = excluded.auth,
          created_at = case when devices.user_id = excluded.user_id then devices.created_at else $5::timestamptz end, last_seen_at = $5::timestamptz
        returning token, platform, created_at as "createdAt", last_seen_at as "lastSeenAt"`,
      [token, user.id, user.organizationId, platform, new Date().toISOString(), device.p256dh ?? null, device.auth ?? null],
    )
    return { previousUserId: here?.userId ?? moved[0]?.userId ?? null, row: row! }
  })
  // A user keeps at most `maxDevices`: the ones seen least recently go (every message fans out to all of them).
  await queryText(
    db,
    `delete from devices where user_id = $1 and organization_id = $3 and token not in (
      select token from devices where user_id = $1 and organization_id = $3 order by last_seen_at desc, created_at desc, token limit $2)`,
    [user.id, maxDevices, user.organizationId],
  )
  return { ...row, created: previousUserId !== user.id, createdAt: isoFromText(row.createdAt), lastSeenAt: isoFromText(row.lastSeenAt) }
}

/** Removes the user's own device; false when the token is not theirs (or not registered at all). */
export async function removeDevice(db: Database, user: { id: string; organizationId: string }, token: string): Promise<boolean> {
  // No registered token falls outside the pattern (`a%00b` is U+0000, which text cannot hold): no SQL for it.
  if (!TOKEN.test(token)) return false
  const rows = await queryText(db, 'delete from devices where token = $1 and user_id = $2 and organization_id = $3 returning 1', [token, user.id, user.organizationId])
  return rows.length > 0
}

/** A device as its owner sees it in `GET /api/devices`: never the token itself, which is stored in clear. */
export interface ListedDevice {
  /** Stable while the token is registered: the first 16 hex digits of its SHA-256. */
  id: string
  /** The token's last 8 characters (at most half of a token shorter than 16), to tell which device is which. */
  tokenSuffix: string
  platform: Device['platform']
  createdAt: string
  lastSeenAt: string
}

/** The shown end of a token: 8 characters, never more than half of it. */
export const tokenSuffix = (token: string) => token.slice(token.length - Math.min(8, Math.floor(token.length / 2)))
/** A device's id in lists: derived from the token (no column holds one), and revealing nothing of it. */
export const deviceId = (token: string) => createHash('sha256').update(token).digest('hex').slice(0, 16)

/** The user's own devices, seen most recently first (the order in which push.maxDevicesPerUser keeps them). */
export async function listDevices(db: Database, user: { id: string; organizationId: string }): Promise<ListedDevice[]> {
  const rows = await queryText<{ token: string; platform: Device['platform']; createdAt: string; lastSeenAt: string }>(
    db,
    `select token, platform, created_at as "createdAt", last_seen_at as "lastSeenAt" from devices
      where user_id = $1 and organization_id = $2 order by last_seen_at desc, created_at desc, token`,
    [user.id, user.organizationId],
  )
  return rows.map((row) => ({
    id: deviceId(row.token),
    tokenSuffix: tokenSuffix(row.token),
    platform: row.platform,
    createdAt: isoFromText(row.createdAt),
    lastSeenAt: isoFromText(row.lastSeenAt),
  }))
}
