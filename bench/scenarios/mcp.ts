/**
 * MCP overhead: `tools/call list_work_items` against its REST twin `GET …/work-items`, same project
 * (100 work items, size 20), same key, same run.
 */
import { seededDatabase } from '../lib/database'
import { startService } from '../lib/processes'
import { recordResult, sectionHead, writeSection } from '../lib/results'
import { CONNECTIONS, DURATION_SECONDS } from '../lib/settings'
import { round } from '../lib/stats'
import { throughput, wrk } from '../lib/wrk'
import { seedOrganization } from '../seed/organization'
import { seedWork } from '../seed/work'
import { TARGETS } from '../targets'

export const name = 'mcp'
export const target = TARGETS[name]

export async function run(): Promise<void> {
  const { url, seeded } = await seededDatabase('worktrack_bench_mcp', async (db) => {
    const seeded = await seedOrganization(db, { scopes: ['work_items:read'] })
    await seedWork(db, seeded, { workItems: 100, entries: 0 })
    return seeded
  })
  const service = await startService(url, 3851)
  const authorization = `Bearer ${seeded.secret}`
  const restUrl = `http://127.0.0.1:3851/api/v1/projects/${seeded.projectId}/work-items?size=20`
  const mcpBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_work_items', arguments: { projectId: seeded.projectId, size: 20 } } })
  const mcpHeaders = { authorization, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
  let rest, mcp, rss
  try {
    const probe = await fetch('http://127.0.0.1:3851/mcp', { method: 'POST', headers: mcpHeaders, body: mcpBody })
    const answer = (await probe.json()) as { result?: { structuredContent?: { items?: unknown[] } } }
    if (answer.result?.structuredContent?.items?.length !== 20) throw new Error(`MCP answered ${probe.status}: ${JSON.stringify(answer).slice(0, 200)}`)
    await wrk(restUrl, { headers: { authorization }, duration: 2 })
    await wrk('http://127.0.0.1:3851/mcp', { method: 'POST', headers: mcpHeaders, body: mcpBody, duration: 2 })
    rest = await wrk(restUrl, { headers: { authorization } })
    mcp = await wrk('http://127.0.0.1:3851/mcp', { method: 'POST', headers: mcpHeaders, body: mcpBody })
    rss = service.peakRssMiB()
  } finally {
    await service.stop()
  }
  const ratio = mcp.requestsPerSecond / rest.requestsPerSecond
  const errors = rest.errors + rest.non2xx + mcp.errors + mcp.non2xx
  writeSection(
    name,
    `## MCP: \`tools/call list_work_items\` vs REST \`GET …/work-items\`

${sectionHead(`\`npm run bench -- mcp\` (wrk, 1 thread, ${CONNECTIONS} connections, ${DURATION_SECONDS} s each, one after the other; 20 work items per answer; stateless MCP: one JSON-RPC POST per call)`)}

| target | req/s | p50 ms | p99 ms |
|---|---:|---:|---:|
| REST \`GET /api/v1/projects/{id}/work-items?size=20\` | ${round(rest.requestsPerSecond)} | ${rest.p50} | ${rest.p99} |
| MCP \`tools/call list_work_items\` | ${round(mcp.requestsPerSecond)} | ${mcp.p50} | ${mcp.p99} |

**Ratio: ${round(ratio, 2)} of REST**. ${target.call} Peak RSS ${round(rss, 1)} MiB. Errors or non-2xx: ${errors}.`,
  )
  recordResult(name, { rest: throughput(rest), mcp: throughput(mcp), peakRssMiB: rss, errors })
  console.log(`mcp: ${round(mcp.requestsPerSecond)} calls/s vs REST ${round(rest.requestsPerSecond)} req/s = ${round(ratio, 2)}`)
}
