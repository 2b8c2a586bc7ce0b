/**
 * The engine's heap sizing (docs/configuration.md, "Memory") is given in three places that must
 * agree: package.json's "start" script (which keeps an operator's own value), the container
 * image's environment, and the benchmarks' service processes (so the figures in bench/RESULTS.md
 * are those of the service as `npm start` runs it); and the script hands the value to the
 * process it starts, unless the operator set one.
 */
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { SERVICE_HEAP_ENV } from '../../bench/lib/processes'

const ROOT = join(import.meta.dir, '..', '..')
const VARIABLE = 'BUN_JSC_forceRAMSize'

describe('the heap sizing of the service', () => {
  const value = SERVICE_HEAP_ENV[VARIABLE]

  test('npm start, the image and the benchmarks give the engine the same value, 512 MiB', () => {
    expect(Number(value)).toBe(512 * 1024 * 1024)
    const start = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.start as string
    expect(start).toBe(`${VARIABLE}=\${${VARIABLE}:-${value}} bun entries/bun.ts`)
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8')
    expect(dockerfile).toMatch(new RegExp(`^ENV .*\\b${VARIABLE}=${value}\\b`, 'm'))
  })

  test('the start script passes the value on, and an operator\'s own value wins', async () => {
    // The script's command line, with `bun entries/bun.ts` swapped for a shell that prints what it got.
    const start = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.start as string
    const printing = start.replace('bun entries/bun.ts', `sh -c 'printf %s "$${VARIABLE}"'`)
    const run = (env: Record<string, string>) => Bun.spawnSync(['sh', '-c', printing], { env: { PATH: process.env.PATH ?? '', ...env } }).stdout.toString()
    expect(run({})).toBe(value)
    expect(run({ [VARIABLE]: '1073741824' })).toBe('1073741824')
  })
})
