/**
 * Password hashing with scrypt from @noble/hashes (pure JavaScript, so identical on Bun, Node
 * and Deno). The parameters travel inside the stored hash, so the cost can rise over time.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto'
import { scryptAsync } from '@noble/hashes/scrypt.js'

/** OWASP's scrypt minimum: N = 2^17, r = 8, p = 1. */
export const DEFAULT_LOG_N = 17

async function derive(password: string, salt: Uint8Array, logN: number, r: number, p: number) {
  return scryptAsync(password.normalize('NFKC'), salt, { N: 2 ** logN, r, p, dkLen: 32, maxmem: 2 ** (logN + 11) })
}

/** `scrypt$<logN>$<r>$<p>$<salt base64>$<hash base64>`. */
export async function hashPassword(password: string, logN = DEFAULT_LOG_N): Promise<string> {
  const salt = randomBytes(16)
  const hash = await derive(password, salt, logN, 8, 1)
  return `scrypt$${logN}$8$1$${salt.toString('base64')}$${Buffer.from(hash).toString('base64')}`
}

/** Verifies in constant time; false for any malformed stored value. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, logN, r, p, salt, hash] = stored.split('$')
  if (scheme !== 'scrypt' || !salt || !hash) return false
  const expected = Buffer.from(hash, 'base64')
  const actual = await derive(password, Buffer.from(salt, 'base64'), Number(logN), Number(r), Number(p))
  return expected.length === actual.length && timingSafeEqual(expected, actual)
}
