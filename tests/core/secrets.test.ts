import { describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { crc32, generateSecret, hashSecret, isWellFormedSecret, secretPrefix } from '../../src/secrets'
import { uuidv7 } from '../../src/ids'

describe('secrets', () => {
  test('format: prefix, 36 base62 characters, 6-character checksum', () => {
    const secret = generateSecret('wtk')
    expect(secret).toMatch(/^wtk_[0-9A-Za-z]{42}$/)
    expect(isWellFormedSecret('wtk', secret)).toBe(true)
    expect(secretPrefix(secret)).toBe(secret.slice(0, 8))
    expect(hashSecret(secret)).toMatch(/^[0-9a-f]{64}$/)
  })

  test('the checksum catches any single changed character and a wrong prefix', () => {
    const secret = generateSecret('dpk')
    for (let i = 4; i < secret.length; i++) {
      const replacement = secret[i] === 'A' ? 'B' : 'A'
      expect(isWellFormedSecret('dpk', secret.slice(0, i) + replacement + secret.slice(i + 1))).toBe(false)
    }
    expect(isWellFormedSecret('wtk', secret)).toBe(false)
  })

  test('the stored form is the SHA-256 of every runtime: Bun\'s one-call hash gives node:crypto\'s digest (stored hashes stay valid)', () => {
    for (const value of [generateSecret('wtk'), generateSecret('dpk'), 'ünïcødé 🔑', '']) expect(hashSecret(value)).toBe(createHash('sha256').update(value).digest('hex'))
    expect(hashSecret('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
  })

  test('CRC32 matches the standard check value', () => {
    expect(crc32('123456789')).toBe(0xcbf43926)
  })

  test('secrets do not repeat', () => {
    const seen = new Set(Array.from({ length: 2000 }, () => generateSecret('wtk')))
    expect(seen.size).toBe(2000)
  })

  test('UUIDv7 ids are valid and ordered by creation time', async () => {
    const first = uuidv7()
    await Bun.sleep(2)
    const second = uuidv7()
    expect(first).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(first < second).toBe(true)
  })
})
