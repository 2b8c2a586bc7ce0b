/**
 * Fan-out of one message to 10,000 devices through the real firebase-admin path (HTTP/2, sendEach
 * of 500) to the local fake FCM: from `POST /api/message` to the last push FCM accepted. The
 * service runs in its own process (tests/helpers/push-worker.ts: the real service plus the
 * redirect to the fake); the fake runs in this process.
 */
import { sql } from 'drizzle-orm'
import { queryRows, queryText } from '../../src/db'
import { seededDatabase } from '../lib/database'
import { startPushService } from '../lib/push-service'
import { recordResult, sectionHead, writeSection } from '../lib/results'
import { round } from '../lib/stats'
import { displayKey } from '../seed/display'
import { seedBareOrganization, seedUser } from '../seed/organization'
import { TARGETS } from '../targets'

export const name = 'push'
export const target = TARGETS[name]

const DEVICES = Number(process.env.BENCH_PUSH_DEVICES ?? 10_000)
const USERS = 2_000
const RUNS = 3
const PORT = 3881

/** A sender with a display key, a page, USERS readers on its access list and DEVICES devices spread over them. */
const seed = () =>
  seededDatabase('worktrack_bench_push', async (db) => {
    const organizationId = await seedBareOrganization(db)
    const sender = await seedUser(db, organizationId, { email: 'sender@bench.example', username: 'sender', displayName: 'Sender' })
    const apiKey = await displayKey(db, { id: sender, organizationId }, 1_000_000)
    const pageName = 'on-call'
    const [page] = await queryRows<{ id: string }>(db, sql`insert into pages (id, organization_id, name, created_by) values (gen_random_uuid(), ${organizationId}, ${pageName}, ${sender}) returning id`)
    await queryText(
      db,
      `insert into users (id, organization_id, email, username, display_name, role, status, password_hash)
        select gen_random_uuid(), $1, 'reader' || n || '@bench.example', 'reader' || n, 'Reader ' || n, 'member', 'active', 'x' from generate_series(1, $2) n`,
      [organizationId, USERS],
    )
    await queryText(db, `insert into page_access (page_id, principal_type, principal_id, organization_id) select $1, 'user', id, $2 from users where username like 'reader%'`, [page!.id, organizationId])
    await queryText(
      db,
      `insert into devices (token, user_id, organization_id, platform)
        select 'bench-' || n || ':APA91b' || md5(n::text), u.id, $1, case when n % 3 = 0 then 'ios' else 'android' end
        from generate_series(1, $3) n join users u on u.organization_id = $1 and u.username = 'reader' || (1 + n % $2)`,
      [organizationId, USERS, DEVICES],
    )
    await db.execute(sql`analyze`)
    return { apiKey, pageName }
  })

export async function run(): Promise<void> {
  const { url, seeded } = await seed()
  const pushService = await startPushService(url, PORT)
  const { fcm, service } = pushService
  const runs: Array<{ messageId: string; seconds: number; perSecond: number; postMs: number; firstMs: number }> = []
  let exactlyOnce = true
  let rss = 0
  try {
    for (let run = 0; run < RUNS; run++) {
      const before = fcm.delivered().length
      const sendsBefore = fcm.sends.length
      const started = performance.now()
      const response = await fetch(`http://127.0.0.1:${PORT}/api/message`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ apiKey: seeded.apiKey, pageName: seeded.pageName, message: `Run ${run + 1}: all hands` }),
      })
      const postMs = performance.now() - started
      if (response.status !== 200) throw new Error(`POST /api/message answered ${response.status}: ${await response.text()}`)
      const deadline = Date.now() + 120_000
      let firstMs = 0
      while (fcm.delivered().length - before < DEVICES) {
        if (!firstMs && fcm.sends.length > sendsBefore) firstMs = performance.now() - started
        if (Date.now() > deadline) throw new Error(`only ${fcm.delivered().length - before} of ${DEVICES} delivered after 120 s`)
        await Bun.sleep(5)
      }
      const seconds = (performance.now() - started) / 1000
      runs.push({ messageId: response.headers.get('x-message-id')!, seconds, perSecond: DEVICES / seconds, postMs, firstMs })
      await Bun.sleep(500)
    }
    // Late duplicates would have arrived by now: each message reached each device once.
    await Bun.sleep(1000)
    for (const run of runs) {
      const accepted = fcm.delivered().filter((send) => send.message.data?.messageId === run.messageId)
      exactlyOnce &&= accepted.length === DEVICES && new Set(accepted.map((send) => send.token)).size === DEVICES
    }
    rss = service.peakRssMiB()
  } finally {
    await pushService.stop()
  }
  const best = runs.reduce((a, b) => (b.perSecond > a.perSecond ? b : a))
  const median = [...runs].sort((a, b) => a.perSecond - b.perSecond)[Math.floor(runs.length / 2)]!
  writeSection(
    name,
    `## Push fan-out: one \`POST /api/message\` to ${round(DEVICES)} devices through firebase-admin to a local fake FCM

${sectionHead(`\`npm run bench -- push\` (${RUNS} messages, one after another; service process on the PostgreSQL server with
  the default push config: 4 workers × batches of 500, one \`sendEach\` each over HTTP/2; the fake FCM — HTTP/2 + TLS on
  loopback — in the benchmark process; ${round(USERS)} users on the page's access list, ${round(DEVICES / USERS)} devices each)`)}
- Measured from sending the request to the last push the fake accepted (HTTP 200).

| run | POST /api/message ms (records ${round(DEVICES)} deliveries) | first push at ms | all delivered s | messages/s |
|---|---:|---:|---:|---:|
${runs.map((r, i) => `| ${i + 1} | ${round(r.postMs)} | ${round(r.firstMs)} | ${round(r.seconds, 2)} | ${round(r.perSecond)} |`).join('\n')}

**Median ${round(median.perSecond)} messages/s, best ${round(best.perSecond)}**. ${target.fanOut} Each message accepted by FCM exactly once per device: ${exactlyOnce ? 'yes' : 'NO'}.
Peak RSS of the service: ${round(rss, 1)} MiB.
`,
  )
  recordResult(name, { devices: DEVICES, perRun: runs.map((r) => r.perSecond), median: median.perSecond, best: best.perSecond, exactlyOnce, peakRssMiB: rss })
  console.log(runs)
}
