/**
 * Every request a tutorial shows runs in CI: scripts/docs-check.sh runs the ```sh blocks of
 * docs/tutorials/*.md against a fresh server, and this (fast, no server) check makes sure no curl
 * line sits where that script does not run it: in a skipped block, a block of another language,
 * or inline code. The blocks are read by the script's own `--extract`, so its rule is the one tested.
 */
import { expect, test } from 'bun:test'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const root = join(import.meta.dir, '..', '..')
const tutorialsDir = join(root, 'docs', 'tutorials')
const tutorials = readdirSync(tutorialsDir).filter((name) => name.endsWith('.md')).sort()

/** The script docs-check.sh would run for a tutorial (its blocks, `localhost:3000` as written). */
function extractedScript(path: string): string {
  const run = Bun.spawnSync(['bash', join(root, 'scripts', 'docs-check.sh'), '--extract', path], { cwd: root })
  if (run.exitCode !== 0) throw new Error(`docs-check.sh --extract ${path}: ${run.stderr.toString()}`)
  return run.stdout.toString()
}

/** The lines of a tutorial that call curl: in any fenced block, or inline code `curl …` naming an address. */
function curlLines(markdown: string): string[] {
  const lines: string[] = []
  let fenced = false
  for (const line of markdown.split('\n')) {
    if (/^```/.test(line)) {
      fenced = !fenced
      continue
    }
    if (fenced ? /\bcurl\b/.test(line) : /`curl [^`]*(localhost|:\/\/|\/api\/)/.test(line)) lines.push(line)
  }
  return lines
}

/** The curl lines of a tutorial that docs-check.sh does not run (each occurrence counted). */
function escapedCurls(path: string): string[] {
  const run = extractedScript(path).split('\n')
  const escaped: string[] = []
  for (const line of curlLines(readFileSync(path, 'utf8'))) {
    const at = run.indexOf(line)
    if (at === -1) escaped.push(line)
    else run.splice(at, 1)
  }
  return escaped
}

test('there are tutorials, and each has blocks that docs-check.sh runs', () => {
  expect(tutorials).toEqual(expect.arrayContaining(['dashboards.md', 'mobile.md', 'operator.md', 'rest-client.md']))
  for (const name of tutorials) {
    const blocks = extractedScript(join(tutorialsDir, name)).match(/^DOCS_BLOCK=\d+ /gm) ?? []
    expect({ name, runs: blocks.length > 0 }).toEqual({ name, runs: true })
  }
})

test('every curl line of the tutorials is in a block docs-check.sh runs', () => {
  for (const name of tutorials) {
    const path = join(tutorialsDir, name)
    expect(curlLines(readFileSync(path, 'utf8')).length).toBeGreaterThan(0)
    expect({ name, escaped: escapedCurls(path) }).toEqual({ name, escaped: [] })
  }
})

test('a curl in a skipped block, another language or inline code is caught', () => {
  const dir = mkdtempSync(join(tmpdir(), 'docs-curls-'))
  try {
    const planted = join(dir, 'planted.md')
    writeFileSync(
      planted,
      [
        'Run `curl localhost:3000/inline` first.',
        '```sh',
        'curl localhost:3000/runs',
        '```',
        '<!-- docs-check: skip -->',
        '```sh',
        'curl localhost:3000/skipped',
        '```',
        '```console',
        '$ curl localhost:3000/console',
        '```',
      ].join('\n'),
    )
    expect(escapedCurls(planted)).toEqual([
      'Run `curl localhost:3000/inline` first.',
      'curl localhost:3000/skipped',
      '$ curl localhost:3000/console',
    ])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
