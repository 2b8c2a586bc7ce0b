/**
 * The embedded database's lock file: one process per data directory. In containers every main
 * process is pid 1, so the lock names the host too (two containers on one volume must not both
 * open it).
 */
import { afterEach, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../src/db'

const made: string[] = []
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function dataDir() {
  const root = mkdtempSync(join(tmpdir(), 'pglite-lock-'))
  made.push(root)
  return { dir: join(root, 'pglite'), lockFile: join(root, 'pglite.lock') }
}

test('the lock names this process and host, and goes when the database closes', async () => {
  const { dir, lockFile } = dataDir()
  const database = await openDatabase(`pglite:${dir}`)
  expect(readFileSync(lockFile, 'utf8')).toBe(`${process.pid}@${hostname()}`)
  await database.close()
  expect(() => readFileSync(lockFile)).toThrow()
})

test("a lock of another host (another container on the volume, also pid 1) is refused, naming it and the way out", async () => {
  const { dir, lockFile } = dataDir()
  writeFileSync(lockFile, `${process.pid}@another-container`)
  await expect(openDatabase(`pglite:${dir}`)).rejects.toThrow(`is in use by process ${process.pid} on host another-container (another container on the same volume?); stop it first, or remove ${lockFile} if it is gone`)
})

test('a lock of this host whose process is gone is taken over; one of a live process refuses', async () => {
  const { dir, lockFile } = dataDir()
  writeFileSync(lockFile, `4194303@${hostname()}`)
  const database = await openDatabase(`pglite:${dir}`)
  expect(readFileSync(lockFile, 'utf8')).toBe(`${process.pid}@${hostname()}`)
  await database.close()
  const holder = Bun.spawn(['sleep', '30'])
  try {
    writeFileSync(lockFile, `${holder.pid}@${hostname()}`)
    await expect(openDatabase(`pglite:${dir}`)).rejects.toThrow(`in use by process ${holder.pid}`)
    // A lock written before hosts were recorded (a pid alone) still counts as this host's.
    writeFileSync(lockFile, String(holder.pid))
    await expect(openDatabase(`pglite:${dir}`)).rejects.toThrow(`in use by process ${holder.pid}`)
  } finally {
    holder.kill()
  }
})
