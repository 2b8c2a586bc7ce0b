/**
 * Stopping a service is bounded: a stop step that never finishes (a worker waiting on something
 * that will not answer) is named in the log and left behind, the steps after it are listed as
 * skipped, and stop() returns, so a process being stopped exits (src/main.ts) rather than hanging.
 */
import { afterAll, expect, test } from 'bun:test'
import { createService } from '../../src/app'
import { loadConfig } from '../../src/config'
import type { Logger } from '../../src/log'
import { definePlugin } from '../../src/plugin'
import { createTestDatabase } from '../helpers/database'

const database = await createTestDatabase()
afterAll(() => database.close())

function recordingLog(lines: Array<{ level: string; message: string; fields?: Record<string, unknown> }>, base: Record<string, unknown> = {}): Logger {
  const write = (level: string) => (message: string, fields?: Record<string, unknown>) => void lines.push({ level, message, fields: { ...base, ...fields } })
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error'), child: (fields) => recordingLog(lines, { ...base, ...fields }) }
}

test('a stop step that hangs is named and left behind; the ones after it are skipped; stop() returns within its budget', async () => {
  const ran: string[] = []
  const registry = [
    definePlugin({ name: 'first', description: 'stops cleanly, last', setup: (context) => context.onStop(() => void ran.push('first')) }),
    definePlugin({ name: 'stuck', description: 'never finishes stopping', setup: (context) => context.onStop(() => new Promise<void>(() => {})) }),
    definePlugin({ name: 'last', description: 'stops cleanly, first', setup: (context) => context.onStop(() => void ran.push('last')) }),
  ]
  const lines: Array<{ level: string; message: string; fields?: Record<string, unknown> }> = []
  const service = await createService({
    registry,
    config: loadConfig(registry, { raw: {}, env: {} }),
    database,
    log: recordingLog(lines),
    background: false,
    stopBudgetMs: 300,
  })
  const begun = performance.now()
  await service.stop()
  const took = performance.now() - begun
  expect(took).toBeGreaterThanOrEqual(250)
  expect(took).toBeLessThan(5_000)
  // Reverse order of registration: `last` ran, `stuck` hung, so `first` and the core's steps were skipped.
  expect(ran).toEqual(['last'])
  const late = lines.find((line) => line.message === 'stop step did not finish in time; the rest are skipped')
  expect(late?.level).toBe('error')
  expect(late?.fields?.step).toBe('plugin stuck')
  expect(late?.fields?.skipped).toEqual(expect.arrayContaining(['plugin first', 'event bus']))
})

test('a stop step that throws is logged by name and the others still run', async () => {
  const ran: string[] = []
  const registry = [
    definePlugin({ name: 'first', description: 'stops cleanly', setup: (context) => context.onStop(() => void ran.push('first')) }),
    definePlugin({
      name: 'broken',
      description: 'throws when stopped',
      setup: (context) =>
        context.onStop(() => {
          throw new Error('already closed')
        }),
    }),
  ]
  const lines: Array<{ level: string; message: string; fields?: Record<string, unknown> }> = []
  const service = await createService({ registry, config: loadConfig(registry, { raw: {}, env: {} }), database, log: recordingLog(lines), background: false })
  await service.stop()
  expect(ran).toEqual(['first'])
  const failed = lines.find((line) => line.message === 'stop step failed')
  expect(failed?.fields?.step).toBe('plugin broken')
  expect(lines.some((line) => line.message.includes('did not finish in time'))).toBe(false)
})
