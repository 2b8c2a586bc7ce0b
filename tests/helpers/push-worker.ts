/**
 * A service process whose push outbox delivers to the fake FCM (for tests that kill it):
 * `bun tests/helpers/push-worker.ts` with DATABASE_URL, FAKE_FCM_PORT, FAKE_FCM_CA (a file) and
 * PUSH_CONFIG (the `push` config section as JSON); with PORT it also serves HTTP (the benchmark).
 * Prints `ready` once its workers run.
 */
import { readFileSync } from 'node:fs'
import { registry } from '../../plugins'
import { createService } from '../../src/app'
import { loadConfig } from '../../src/config'
import { FcmOptionsRef } from '../../src/services/push'
import { fakeFcmOptions, redirectFcm } from './fake-fcm'

redirectFcm(Number(process.env.FAKE_FCM_PORT), readFileSync(process.env.FAKE_FCM_CA!))
const config = loadConfig(registry, { raw: { push: JSON.parse(process.env.PUSH_CONFIG ?? '{}') }, env: { DATABASE_URL: process.env.DATABASE_URL } })
const service = await createService({ registry, config, provide: (services) => services.provide(FcmOptionsRef, fakeFcmOptions()) })
if (process.env.PORT) Bun.serve({ port: Number(process.env.PORT), hostname: '127.0.0.1', fetch: (request) => service.fetch(request) })
process.stdout.write('ready\n')
