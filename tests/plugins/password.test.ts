/**
 * Password hashing: scrypt through a gate of bounded concurrency; stored hashes carry their
 * parameters, older ones still verify (a vector made by another scrypt implementation, the one
 * this service used before) and are upgraded on a match.
 */
import { describe, expect, test } from 'bun:test'
import { PasswordHasher } from '../../plugins/auth/password'
import { ApiError } from '../../src/http/errors'

/** 'correct horse battery' at N=2^10 r=8 p=1, made with @noble/hashes (pure JavaScript scrypt). */
const LEGACY = 'scrypt$10$8$1$d29ya3RyYWNrLXZlY3Rvcg==$BjkUV8fEZCTXzBJI/OODqCbsmcrHShLKypcj2ehO4KY='

describe('PasswordHasher', () => {
  const hasher = new PasswordHasher({ logN: 10, parallelism: 5, maxConcurrent: 4 })

  test('a hash carries its parameters and verifies only its own password', async () => {
    const stored = await hasher.hash('correct horse battery')
    expect(stored).toMatch(/^scrypt\$10\$8\$5\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/)
    expect(await hasher.verify('correct horse battery', stored)).toEqual({ matches: true })
    expect(await hasher.verify('correct horse batterY', stored)).toEqual({ matches: false })
  })

  test('a hash made with other parameters by another implementation verifies, and a match is upgraded', async () => {
    const result = await hasher.verify('correct horse battery', LEGACY)
    expect(result.matches).toBe(true)
    expect(result.upgraded).toMatch(/^scrypt\$10\$8\$5\$/)
    expect(await hasher.verify('correct horse battery', result.upgraded!)).toEqual({ matches: true })
    expect(await hasher.verify('wrong', LEGACY)).toEqual({ matches: false })
  })

  test('malformed or out-of-bounds stored values never match', async () => {
    for (const stored of ['', 'bcrypt$x', 'scrypt$30$8$1$c2FsdA==$aGFzaA==', 'scrypt$10$8$99$c2FsdA==$aGFzaA==', 'scrypt$x$8$1$c2FsdA==$aGFzaA=='])
      expect(await hasher.verify('anything', stored)).toEqual({ matches: false })
  })

  test('past maxConcurrent, a caller waits for a slot; past the wait it gets 503 with Retry-After', async () => {
    const gated = new PasswordHasher({ logN: 12, parallelism: 1, maxConcurrent: 1, maxWaitMs: 0 })
    const first = gated.hash('first')
    // The slot is taken as soon as the first call is made: the second finds it busy.
    const refused = await gated.hash('second').catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(ApiError)
    expect(refused).toMatchObject({ status: 503, code: 'UNAVAILABLE', headers: { 'retry-after': '2' } })
    await first
    const patient = new PasswordHasher({ logN: 12, parallelism: 1, maxConcurrent: 1, maxWaitMs: 30_000 })
    const all = await Promise.all(['a', 'b', 'c'].map((password) => patient.hash(password)))
    expect(new Set(all).size).toBe(3)
  })
})
