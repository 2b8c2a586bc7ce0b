/**
 * Password hashing: scrypt from `node:crypto` (Node, Bun and Deno all provide it natively and off
 * the event loop), through a gate that runs at most `maxConcurrent` hashes at once per process.
 * A caller waits in a short queue (at most `maxWaitMs`); past it, 503 with Retry-After. So memory
 * is bounded however many sign-ins arrive together (each hash holds 128·N·r bytes).
 *
 * The default is OWASP's equivalent of N=2^17 r=8 p=1 that trades memory for passes: N=2^14 r=8
 * p=5, the same CPU in 16 MiB instead of 128. The parameters travel inside the stored hash, so
 * older hashes still verify, and a successful sign-in re-hashes with the current ones.
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto'
import { busy } from '../../src/http/errors'

export const DEFAULT_LOG_N = 14
export const DEFAULT_PARALLELISM = 5
const BLOCK_SIZE = 8
const KEY_LENGTH = 32
/** Bounds on what a stored hash may ask for (verifying it must not become the attack). */
const MAX_LOG_N = 20
const MAX_R = 16
const MAX_P = 16

export interface HashSettings {
  /** log2 of scrypt's N. */
  logN: number
  /** scrypt's p: passes over the same memory. */
  parallelism: number
  /** Hashes running at once in this process. */
  maxConcurrent: number
  /** How long a caller may wait for a slot before 503. */
  maxWaitMs: number
}

interface Parameters {
  logN: number
  r: number
  p: number
}

function derive(password: string, salt: Buffer, { logN, r, p }: Parameters): Promise<Buffer> {
  const N = 2 ** logN
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, { N, r, p, maxmem: 128 * N * r * 2 + 128 * r * p + 1024 * 1024 }, (error, key) => (error ? reject(error) : resolve(key))),
  )
}

/** `scrypt$<logN>$<r>$<p>$<salt base64>$<hash base64>`, or null when malformed or out of bounds. */
function parse(stored: string): (Parameters & { salt: Buffer; hash: Buffer }) | null {
  const [scheme, logN, r, p, salt, hash] = stored.split('$')
  const parameters = { logN: Number(logN), r: Number(r), p: Number(p) }
  if (scheme !== 'scrypt' || !salt || !hash) return null
  if (![parameters.logN, parameters.r, parameters.p].every(Number.isInteger)) return null
  if (parameters.logN < 1 || parameters.logN > MAX_LOG_N || parameters.r < 1 || parameters.r > MAX_R || parameters.p < 1 || parameters.p > MAX_P) return null
  return { ...parameters, salt: Buffer.from(salt, 'base64'), hash: Buffer.from(hash, 'base64') }
}

/** 503: every hashing slot is busy and the wait ran out (expected under attack: not logged as a failure). */
export const hashingBusy = () => busy('The service is busy checking other passwords; retry shortly.', 2)

/** At most `limit` tasks at once; the others wait their turn for at most `maxWaitMs`. */
class Gate {
  private running = 0
  private readonly waiting: Array<{ start: () => void; timer: ReturnType<typeof setTimeout> }> = []

  constructor(
    private readonly limit: number,
    private readonly maxWaitMs: number,
  ) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) {
      // No wait allowed: refused now, not after a timer that a busy event loop may run late.
      if (this.maxWaitMs <= 0) throw hashingBusy()
      await this.wait()
    } else this.running++
    try {
      return await task()
    } finally {
      const next = this.waiting.shift()
      if (next) {
        clearTimeout(next.timer)
        next.start() // the slot passes on: `running` stays
      } else this.running--
    }
  }

  private wait(): Promise<void> {
    return new Promise((resolve, reject) => {
      const entry = {
        start: resolve,
        timer: setTimeout(() => {
          const index = this.waiting.indexOf(entry)
          if (index >= 0) this.waiting.splice(index, 1)
          reject(hashingBusy())
        }, this.maxWaitMs),
      }
      this.waiting.push(entry)
    })
  }
}

export interface Verification {
  matches: boolean
  /** A new hash with the current parameters, when the stored one used others (sign-in stores it). */
  upgraded?: string
}

/** Hashing and verification through one gate per process (see the module comment). */
export class PasswordHasher {
  private readonly gate: Gate
  private readonly current: Parameters

  constructor(settings: Partial<HashSettings> = {}) {
    this.current = { logN: settings.logN ?? DEFAULT_LOG_N, r: BLOCK_SIZE, p: settings.parallelism ?? DEFAULT_PARALLELISM }
    this.gate = new Gate(settings.maxConcurrent ?? 2, settings.maxWaitMs ?? 2000)
  }

  /** A new hash of `password` with the current parameters. */
  hash(password: string): Promise<string> {
    return this.gate.run(() => this.hashNow(password))
  }

  /**
   * Checks `password` against `stored` in constant time (false for a malformed stored value); a
   * match on outdated parameters also returns the upgraded hash, made in the same slot.
   */
  verify(password: string, stored: string): Promise<Verification> {
    return this.gate.run(async () => {
      const parsed = parse(stored)
      if (!parsed) {
        // A malformed value still costs one hash, so it answers no faster than a wrong password.
        await this.hashNow(password)
        return { matches: false }
      }
      const actual = await derive(password, parsed.salt, parsed)
      const matches = parsed.hash.length === actual.length && timingSafeEqual(parsed.hash, actual)
      const outdated = parsed.logN !== this.current.logN || parsed.r !== this.current.r || parsed.p !== this.current.p
      return matches && outdated ? { matches, upgraded: await this.hashNow(password) } : { matches }
    })
  }

  private async hashNow(password: string): Promise<string> {
    const salt = randomBytes(16)
    const hash = await derive(password, salt, this.current)
    const { logN, r, p } = this.current
    return `scrypt$${logN}$${r}$${p}$${salt.toString('base64')}$${hash.toString('base64')}`
  }
}
