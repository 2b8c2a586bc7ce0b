/**
 * The VAPID key pair Web Push pushes are signed with (RFC 8292): from config
 * (`push.webPush.publicKey` and `privateKey`), or else generated once and kept in the database
 * (`push_vapid_keys`) so that every instance, and every restart, signs with the same key: browsers
 * subscribed with its public key, and a new key would orphan every subscription.
 */
import { queryText, type Database } from '../../src/db'
import { StartupError } from '../../src/startup-error'
import { generateVapidKeys } from './webpush'

const DATABASE_KEY_ID = '00000000-0000-0000-0000-000000000001'

export interface VapidConfig {
  publicKey?: string
  privateKey?: string
}

/** The key pair and where it came from: `config` or `database`. */
export async function openVapidKeys(db: Database, config: VapidConfig): Promise<{ publicKey: string; privateKey: string; source: 'config' | 'database' }> {
  if (config.publicKey || config.privateKey) {
    if (!config.publicKey || !config.privateKey) throw new StartupError('push.webPush: give both publicKey and privateKey (base64url, as `npx web-push generate-vapid-keys` prints them), or neither to use a key kept in the database.')
    return { publicKey: config.publicKey, privateKey: config.privateKey, source: 'config' }
  }
  // One row under a fixed id: the first instance to start inserts it, every other reads the same.
  const fresh = generateVapidKeys()
  await queryText(db, 'insert into push_vapid_keys (id, public_key, private_key) values ($1, $2, $3) on conflict (id) do nothing', [DATABASE_KEY_ID, fresh.publicKey, fresh.privateKey])
  const [row] = await queryText<{ publicKey: string; privateKey: string }>(db, 'select public_key as "publicKey", private_key as "privateKey" from push_vapid_keys where id = $1', [DATABASE_KEY_ID])
  return { ...row!, source: 'database' }
}
