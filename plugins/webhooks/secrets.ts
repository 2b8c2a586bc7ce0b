/**
 * Signing secrets: `whsec_` + base64 of 32 random bytes (the Standard Webhooks form), shown once.
 * Unlike API keys they cannot be stored as hashes (the service signs with them), so they are
 * sealed with AES-256-GCM under a key from `webhooks.encryptionKey`; without one configured, a
 * key generated once and kept in the database (webhook_keys) is used, and the start-up log says
 * so. A sealed value names its key (the first 8 hex digits of the key's SHA-256), so a secret
 * sealed under another key is reported as such instead of failing as garbage.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'
import { queryText, type Database } from '../../src/db'
import { StartupError } from '../../src/startup-error'

export const SECRET_PREFIX = 'whsec_'

const DATABASE_KEY_ID = '00000000-0000-0000-0000-000000000001'

/** A new signing secret. */
export const generateSigningSecret = () => SECRET_PREFIX + randomBytes(32).toString('base64')

export class SealedWithAnotherKey extends Error {}

export interface SecretBox {
  seal(secret: string): string
  /** Throws SealedWithAnotherKey for a value sealed under another key. */
  open(sealed: string): string
  /** Where the key comes from (for the start-up log). */
  readonly source: 'config' | 'database'
}

function boxFor(key: Buffer, source: SecretBox['source']): SecretBox {
  const keyId = createHash('sha256').update(key).digest('hex').slice(0, 8)
  return {
    source,
    seal(secret) {
      const iv = randomBytes(12)
      const cipher = createCipheriv('aes-256-gcm', key, iv)
      const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final(), cipher.getAuthTag()])
      return `v1.${keyId}.${iv.toString('base64')}.${sealed.toString('base64')}`
    },
    open(value) {
      const [version, id, iv, body] = value.split('.')
      if (version !== 'v1' || !iv || !body) throw new Error('not a sealed secret')
      if (id !== keyId) throw new SealedWithAnotherKey(`the secret was sealed with another encryption key (${id}, this service has ${keyId}); rotate the webhook's secret`)
      const bytes = Buffer.from(body, 'base64')
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'))
      decipher.setAuthTag(bytes.subarray(bytes.length - 16))
      return Buffer.concat([decipher.update(bytes.subarray(0, bytes.length - 16)), decipher.final()]).toString('utf8')
    },
  }
}

/** A 32-byte key in base64 (or hex); anything else is a start-up error naming the setting. */
export function parseEncryptionKey(text: string): Buffer {
  const trimmed = text.trim()
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, 'hex') : Buffer.from(trimmed, 'base64')
  if (key.length !== 32) throw new StartupError('config webhooks.encryptionKey: must be 32 bytes in base64 or hex (e.g. the output of `openssl rand -base64 32`)')
  return key
}

/** The configured key's box, or the database's key (created by the first instance to need it). */
export async function openSecretBox(db: Database, configured: string | undefined): Promise<SecretBox> {
  if (configured) return boxFor(parseEncryptionKey(configured), 'config')
  // One row under a fixed id: the first instance to start inserts it, every other reads the same.
  await queryText(db, `insert into webhook_keys (id, key) values ($1, $2) on conflict (id) do nothing`, [DATABASE_KEY_ID, randomBytes(32).toString('base64')])
  const [row] = await queryText<{ key: string }>(db, 'select key from webhook_keys where id = $1', [DATABASE_KEY_ID])
  return boxFor(Buffer.from(row!.key, 'base64'), 'database')
}
