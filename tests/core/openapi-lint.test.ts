/**
 * The served OpenAPI document passes Spectral (`spectral:oas`, .spectral.yaml) and Redocly
 * (`recommended`, redocly.yaml) with no error and no warning; the rules those files turn off say
 * why there. Both CLIs run as child processes on a copy of the document, offline.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { startTestService, type TestService } from '../helpers/service'

const ROOT = resolve(import.meta.dir, '../..')
const bin = (name: string) => join(ROOT, 'node_modules/.bin', name)

/**
 * Only what the CLIs need: no proxy or token from the caller's environment, Redocly's telemetry
 * and update check off (redocly.yaml also says `telemetry: off`), so neither reaches the network.
 */
const LINTER_ENV = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: tmpdir(),
  CI: 'true',
  NO_COLOR: '1',
  REDOCLY_TELEMETRY: 'off',
  REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
  REDOCLY_SUPPRESS_NOTIFICATIONS: 'true',
}

let api: TestService
let directory: string
let documentFile: string
let document: any

beforeAll(async () => {
  api = await startTestService()
  document = (await api.request('GET', '/docs/json')).body
  directory = mkdtempSync(join(tmpdir(), 'openapi-lint-'))
  documentFile = join(directory, 'openapi.json')
  writeFileSync(documentFile, JSON.stringify(document, null, 2))
})
afterAll(async () => {
  rmSync(directory, { recursive: true, force: true })
  await api.stop()
})

async function run(command: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = Bun.spawn(command, { cwd: ROOT, env: LINTER_ENV, stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  return { code, stdout, stderr }
}

/** One line per finding, so a failure shows what to fix. */
const findings = (items: { rule: string; severity: string; message: string; where: string }[]) =>
  items.map((item) => `${item.severity} ${item.rule} at ${item.where}: ${item.message}`)

describe('OpenAPI linters', () => {
  test('Spectral (spectral:oas) reports nothing', async () => {
    const output = join(directory, 'spectral.json')
    const result = await run([bin('spectral'), 'lint', '-r', join(ROOT, '.spectral.yaml'), '-f', 'json', '-o', output, '--fail-severity', 'hint', documentFile])
    const report: { code: string; severity: number; message: string; path: string[] }[] = JSON.parse(readFileSync(output, 'utf8'))
    const severities = ['error', 'warning', 'info', 'hint']
    expect(findings(report.map((item) => ({ rule: item.code, severity: severities[item.severity]!, message: item.message, where: item.path.join('.') })))).toEqual([])
    expect(result.code).toBe(0)
  })

  test('Redocly (recommended) reports nothing', async () => {
    const result = await run([bin('redocly'), 'lint', '--config', join(ROOT, 'redocly.yaml'), '--format=json', documentFile])
    const report: { totals: { errors: number; warnings: number }; problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[] } = JSON.parse(
      result.stdout,
    )
    expect(findings(report.problems.map((item) => ({ rule: item.ruleId, severity: item.severity, message: item.message, where: item.location[0]?.pointer ?? '' })))).toEqual([])
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 })
    expect(result.code).toBe(0)
  })

  // .spectral.yaml turns `oas3-operation-security-defined` off (it takes scopes for OAuth's only);
  // what it checked, and what it could not, holds here.
  test('every security requirement names a declared scheme, and its scopes are the service’s', () => {
    const schemes = Object.keys(document.components.securitySchemes)
    const scopes = new Set(api.service.core.scopes.map((scope) => scope.name))
    const problems: string[] = []
    for (const [path, operations] of Object.entries<any>(document.paths))
      for (const [method, operation] of Object.entries<any>(operations))
        for (const requirement of operation.security)
          for (const [scheme, required] of Object.entries<string[]>(requirement)) {
            if (!schemes.includes(scheme)) problems.push(`${method.toUpperCase()} ${path}: no scheme ${scheme}`)
            for (const scope of required) if (!scopes.has(scope)) problems.push(`${method.toUpperCase()} ${path}: no scope ${scope}`)
          }
    expect(problems).toEqual([])
  })

  // redocly.yaml turns `operation-4xx-response` off for the probes' sake; the rule holds for the
  // rest but the VAPID public key, a public constant that no request can get wrong.
  test('every operation but the probes and the VAPID key documents a 4XX answer', () => {
    const without: string[] = []
    for (const [path, operations] of Object.entries<any>(document.paths))
      for (const [method, operation] of Object.entries<any>(operations))
        if (!Object.keys(operation.responses).some((status) => status.startsWith('4'))) without.push(`${method.toUpperCase()} ${path}`)
    expect(without.sort()).toEqual(['GET /api/push/vapid-key', 'GET /health', 'GET /ready'])
  })
})
