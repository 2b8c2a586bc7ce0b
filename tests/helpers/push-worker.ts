/**
 * A service process whose push outbox delivers to the fake FCM (for tests that kill it):
 * `bun tests/helpers/push-worker.ts` with DATABASE_URL, FAKE_FCM_PORT, FAKE_FCM_CA (a file) and
 * PUSH_CONFIG (the `push` config section as JSON); with PORT it also serves HTTP (the benchmark).
 * Prints `ready` once its workers run. (The general form is tests/helpers/instance.ts.)
 */
import { readFileSync } from 'node:fs'
import { runInstance } from './instance'

await runInstance({
  databaseUrl: process.env.DATABASE_URL!,
  raw: { push: JSON.parse(process.env.PUSH_CONFIG ?? '{}') },
  port: process.env.PORT ? Number(process.env.PORT) : undefined,
  fcm: { port: Number(process.env.FAKE_FCM_PORT), ca: readFileSync(process.env.FAKE_FCM_CA!) },
})
process.stdout.write('ready\n')
