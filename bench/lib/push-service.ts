/**
 * The service in its own process (tests/helpers/push-worker.ts: the real service, its
 * firebase-admin connections redirected) and the fake FCM it sends to, in this process.
 */
import { rmSync } from 'node:fs'
import { startFakeFcm, type FakeFcm } from '../../tests/helpers/fake-fcm'
import { startProcess, type RunningProcess } from './processes'

export interface PushService {
  fcm: FakeFcm
  service: RunningProcess
  /** Stops the service, then the fake, and removes the fake's CA file. */
  stop(): Promise<void>
}

/** Starts the fake FCM and the service on `url`'s database at `port`, with the default push configuration. */
export async function startPushService(url: string, port: number): Promise<PushService> {
  const fcm = await startFakeFcm()
  const caFile = `/tmp/worktrack-bench-fcm-ca-${process.pid}.pem`
  await Bun.write(caFile, fcm.ca)
  const service = await startProcess(
    [process.execPath, 'tests/helpers/push-worker.ts'],
    { DATABASE_URL: url, FAKE_FCM_PORT: String(fcm.port), FAKE_FCM_CA: caFile, PUSH_CONFIG: JSON.stringify({}), SERVICE_CONFIG: '' },
    port,
  )
  return {
    fcm,
    service,
    async stop() {
      await service.stop()
      await fcm.close()
      rmSync(caFile, { force: true })
    },
  }
}
