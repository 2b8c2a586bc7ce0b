/**
 * The operator CLI beside a running server on the embedded database. PGlite belongs to one
 * process, so while the server holds it the CLI cannot open it; instead the server, once it
 * listens, writes a control file beside the database's lock (`<dir>.control.json`, mode 0600:
 * its address and a random token) and answers `POST /_control/cli` for that token from a
 * loopback address by running the command itself, with the same code and output as the CLI. The
 * file goes when the server stops; a file whose process is gone is ignored. A PostgreSQL server
 * needs none of this: any number of processes share it.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { chmodSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Elysia } from 'elysia'
import { bearerToken } from './http/credentials'
import { unauthorized } from './http/errors'

/** What a command run answers: its exit code and what it printed. */
export interface CommandOutcome {
  code: number
  stdout: string
  stderr: string
}

export interface Control {
  token: string
  run(argv: string[]): Promise<CommandOutcome>
}

interface ControlFile {
  url: string
  token: string
  pid: number
}

/** Beside the lock file (`data/pglite` → `data/pglite.control.json`), outside the database's own directory. */
export const controlPath = (dir: string) => join(dir, '..', `${dir.split('/').filter(Boolean).pop()}.control.json`)

export const newControlToken = () => randomBytes(32).toString('base64url')

/** Writes the control file for a server listening at `url`; returns its removal. */
export function writeControl(dir: string, url: string, token: string): () => void {
  const path = controlPath(dir)
  writeFileSync(path, JSON.stringify({ url, token, pid: process.pid } satisfies ControlFile), { mode: 0o600 })
  chmodSync(path, 0o600)
  return () => {
    try {
      const current = JSON.parse(readFileSync(path, 'utf8')) as ControlFile
      if (current.pid === process.pid) rmSync(path, { force: true })
    } catch {
      // gone already
    }
  }
}

/** The control file of the server holding `dir` (process `owner`), if it wrote one. */
export function readControl(dir: string, owner: number): ControlFile | undefined {
  try {
    const file = JSON.parse(readFileSync(controlPath(dir), 'utf8')) as ControlFile
    return file.pid === owner && typeof file.url === 'string' && typeof file.token === 'string' ? file : undefined
  } catch {
    return undefined
  }
}

/** Runs `argv` on the server that wrote `file`; its outcome, or undefined when it cannot be reached. */
export async function runThrough(file: ControlFile, argv: readonly string[]): Promise<CommandOutcome | undefined> {
  const url = new URL('/_control/cli', file.url.replace('://0.0.0.0', '://127.0.0.1').replace('://[::]', '://[::1]'))
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${file.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ argv }),
    })
    if (response.status !== 200) return undefined
    return (await response.json()) as CommandOutcome
  } catch {
    return undefined
  }
}

const LOOPBACK = /^(?:127\.|::1$|::ffff:127\.)/
const digest = (value: string) => createHash('sha256').update(value).digest()

/** `POST /_control/cli` (hidden from the document): the token's bearer, from this machine, runs a command. */
export function controlRoutes(control: Control, clientAddress: (request: Request) => string | undefined) {
  const expected = digest(control.token)
  return new Elysia({ name: 'control' }).post(
    '/_control/cli',
    async ({ request, body }) => {
      const presented = bearerToken(request.headers.get('authorization'))
      const address = clientAddress(request) ?? ''
      if (presented === undefined || !timingSafeEqual(digest(presented), expected) || !LOOPBACK.test(address))
        throw unauthorized('The control token of this machine is required.', presented !== undefined)
      const argv = (body as { argv?: unknown } | undefined)?.argv
      if (!Array.isArray(argv) || argv.length > 64 || !argv.every((arg) => typeof arg === 'string' && arg.length <= 4096))
        throw unauthorized('The control token of this machine is required.', true)
      return control.run(argv as string[])
    },
    { detail: { hide: true } },
  )
}
