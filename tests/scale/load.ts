/**
 * A mixed load spread round-robin over every instance while the scale-out checks run: API v1
 * reads and writes, search, display component updates and MCP tool calls (the real SDK client).
 * Every outcome is recorded; a 5xx, a transport error or any unexpected status is a failure.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { SAMPLE_DATA } from '../helpers/display-fixture'
import type { Instance } from '../helpers/instance'
import { callTool, connectMcp } from '../helpers/mcp'
import { call } from './cluster'

export interface LoadTarget {
  instances: Instance[]
  projectId: string
  /** Keys with every scope: an editor of the project and a viewer. */
  editorKey: string
  viewerKey: string
  /** A display key and one of its components the load updates (not one the live checks watch). */
  displayKey: string
  componentId: string
}

interface Operation {
  name: string
  /** Runs the operation on `instance`; returns the status seen (200 for a successful MCP call). */
  run(instance: Instance, mcp: Client): Promise<{ status: number; detail?: string }>
}

export interface LoadReport {
  seconds: number
  total: number
  /** Per operation: count, statuses seen, p50 and max milliseconds. */
  operations: Record<string, { count: number; statuses: Record<string, number>; p50Ms: number; maxMs: number }>
  perInstance: Record<string, number>
  failures: string[]
  serverErrors: number
}

const SEARCH_WORDS = ['scale', 'load', 'instance', 'alpha']

function operations(target: LoadTarget, workItems: string[]): Operation[] {
  const { projectId, editorKey, viewerKey } = target
  const pick = () => workItems[Math.floor(Math.random() * workItems.length)]
  const word = () => SEARCH_WORDS[Math.floor(Math.random() * SEARCH_WORDS.length)]!
  const expect = (exchange: { status: number; text: string }, status: number) => ({ status: exchange.status, detail: exchange.status === status ? undefined : exchange.text.slice(0, 300) })
  const tool = async (mcp: Client, name: string, args: Record<string, unknown>) => {
    const outcome = await callTool(mcp, name, args)
    return { status: outcome.isError ? Number(outcome.data?.status ?? 0) || 0 : 200, detail: outcome.isError ? JSON.stringify(outcome.data).slice(0, 300) : undefined, data: outcome.data }
  }
  return [
    { name: 'v1 list work items', run: async (i) => expect(await call(i, 'GET', `/api/v1/projects/${projectId}/work-items?size=20`, { bearer: viewerKey }), 200) },
    {
      name: 'v1 create work item',
      run: async (i) => {
        const created = await call(i, 'POST', `/api/v1/projects/${projectId}/work-items`, { bearer: editorKey, body: { title: `scale load item via ${i.name}`, description: 'instance alpha' } })
        if (created.status === 201) workItems.push(created.body.data.id)
        return expect(created, 201)
      },
    },
    {
      name: 'v1 update work item',
      run: async (i) => expect(await call(i, 'PATCH', `/api/v1/projects/${projectId}/work-items/${pick()}`, { bearer: editorKey, body: { status: 'in_progress', priority: 2 } }), 200),
    },
    { name: 'v1 get work item', run: async (i) => expect(await call(i, 'GET', `/api/v1/projects/${projectId}/work-items/${pick()}`, { bearer: viewerKey }), 200) },
    { name: 'v1 create entry', run: async (i) => expect(await call(i, 'POST', `/api/v1/work-items/${pick()}/entries`, { bearer: editorKey, body: { body: `load note from ${i.name}` } }), 201) },
    { name: 'v1 search', run: async (i) => expect(await call(i, 'GET', `/api/v1/projects/${projectId}/search?q=${word()}&limit=10`, { bearer: viewerKey }), 200) },
    { name: 'v1 users/me', run: async (i) => expect(await call(i, 'GET', '/api/v1/users/me', { bearer: viewerKey }), 200) },
    {
      name: 'component update',
      run: async (i) =>
        expect(
          await call(i, 'POST', '/api/component', {
            body: { componentId: target.componentId, apiKey: target.displayKey, timestamp: 1_900_000_000, data: { ...SAMPLE_DATA.verticalBox, bottomText: { ...SAMPLE_DATA.verticalBox.bottomText, value: `${i.name} ${Date.now()}` } } },
          }),
          200,
        ),
    },
    { name: 'mcp list_work_items', run: async (_, mcp) => tool(mcp, 'list_work_items', { projectId, size: 10 }) },
    { name: 'mcp search_project', run: async (_, mcp) => tool(mcp, 'search_project', { projectId, q: word(), limit: 10 }) },
    {
      name: 'mcp create_work_item',
      run: async (i, mcp) => {
        const outcome = await tool(mcp, 'create_work_item', { projectId, title: `scale mcp item via ${i.name}` })
        if (outcome.status === 200) workItems.push(outcome.data.id)
        return outcome
      },
    },
    { name: 'mcp create_entry', run: async (i, mcp) => tool(mcp, 'create_entry', { workItemId: pick(), body: `mcp note from ${i.name}` }) },
  ]
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]! : 0
}

/** Starts `workers` loops; `stop()` waits for the operations in flight and reports. */
export async function startMixedLoad(target: LoadTarget, workers = 6): Promise<{ stop(): Promise<LoadReport> }> {
  const clients = await Promise.all(target.instances.map((instance) => connectMcp(instance.url, target.editorKey)))
  const workItems: string[] = []
  const first = await call(target.instances[0]!, 'POST', `/api/v1/projects/${target.projectId}/work-items`, { bearer: target.editorKey, body: { title: 'scale load seed item' } })
  if (first.status !== 201) throw new Error(`load seed item: ${first.status} ${first.text}`)
  workItems.push(first.body.data.id)
  const ops = operations(target, workItems)
  const samples = new Map<string, { statuses: Record<string, number>; ms: number[] }>()
  const perInstance: Record<string, number> = {}
  const failures: string[] = []
  let serverErrors = 0
  let running = true
  let sequence = 0
  const started = performance.now()

  const loop = async () => {
    while (running) {
      const n = sequence++
      const index = n % target.instances.length
      const instance = target.instances[index]!
      const op = ops[Math.floor(n / target.instances.length) % ops.length]!
      const begun = performance.now()
      let status: number
      let detail: string | undefined
      try {
        ;({ status, detail } = await op.run(instance, clients[index]!))
      } catch (error) {
        status = 0
        detail = `transport: ${(error as Error).message}`
      }
      const sample = samples.get(op.name) ?? { statuses: {}, ms: [] }
      samples.set(op.name, sample)
      sample.statuses[status] = (sample.statuses[status] ?? 0) + 1
      sample.ms.push(performance.now() - begun)
      perInstance[instance.name] = (perInstance[instance.name] ?? 0) + 1
      if (status >= 500 || status === 0) serverErrors++
      if (detail !== undefined) failures.push(`${instance.name} ${op.name}: ${status} ${detail}`)
    }
  }
  const loops = Array.from({ length: workers }, loop)

  return {
    async stop() {
      running = false
      await Promise.all(loops)
      await Promise.all(clients.map((client) => client.close().catch(() => {})))
      const report: LoadReport = { seconds: (performance.now() - started) / 1000, total: 0, operations: {}, perInstance, failures, serverErrors }
      for (const [name, sample] of samples) {
        report.total += sample.ms.length
        report.operations[name] = { count: sample.ms.length, statuses: sample.statuses, p50Ms: Math.round(percentile(sample.ms, 0.5)), maxMs: Math.round(Math.max(...sample.ms)) }
      }
      return report
    },
  }
}
