/**
 * The tutorials (docs/tutorials/*.md) run in a reader's shell one after another as they run in CI
 * (scripts/docs-check.sh): each starts its server with its own log and its PID kept, calls it at
 * `$BASE` (set once, in its first block), names its config file as its config block is saved, has
 * git ignore what it writes in the checkout, and ends with a block that stops its server. And
 * docs-check.sh holds a tutorial to that last rule: one whose server outlives its blocks fails
 * (the passing case is every real tutorial, which CI runs).
 */
import { expect, test } from 'bun:test'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { exited } from '../helpers/process'

const root = join(import.meta.dir, '..', '..')
const tutorials = readdirSync(join(root, 'docs', 'tutorials'))
  .filter((name) => name.endsWith('.md'))
  .sort()

interface Block {
  info: string
  skipped: boolean
  text: string
}

/** The fenced blocks of a tutorial: their info string, whether docs-check skips them, their text. */
function blocksOf(markdown: string): Block[] {
  return [...markdown.matchAll(/^(<!-- docs-check: skip -->\n)?```([^\n]*)\n([\s\S]*?)^```[ \t]*$/gm)].map((match) => ({ skipped: Boolean(match[1]), info: match[2]!.trim(), text: match[3]! }))
}

const read = (name: string) => readFileSync(join(root, 'docs', 'tutorials', name), 'utf8')
const runs = (block: Block) => !block.skipped && /^(sh|bash)\b/.test(block.info)
const ignoredByGit = (paths: string[]) => Bun.spawnSync(['git', 'check-ignore', '--no-index', ...paths], { cwd: root }).stdout.toString().trim().split('\n')

test('each tutorial starts its server with a log of its own and keeps its PID, and its last block stops it', () => {
  const logs = new Set<string>()
  for (const name of tutorials) {
    const blocks = blocksOf(read(name))
    const start = blocks.filter((block) => block.skipped)
    expect({ name, startBlocks: start.length }).toEqual({ name, startBlocks: 1 })
    const log = `${name.replace(/\.md$/, '')}.log`
    expect({ name, log: start[0]!.text.includes(`export SERVICE_LOG=$PWD/${log}\n`) }).toEqual({ name, log: true })
    expect(start[0]!.text).toContain('> "$SERVICE_LOG" 2>&1 &')
    expect(start[0]!.text).toContain('\nSERVICE_PID=$!\n')
    logs.add(log)
    const last = blocks.filter(runs).at(-1)!
    expect({ name, stops: last.text.startsWith('kill "$SERVICE_PID"\nwhile kill -0 "$SERVICE_PID" 2>/dev/null; do sleep 0.1; done') }).toEqual({ name, stops: true })
  }
  expect(logs.size).toBe(tutorials.length)
  expect(ignoredByGit([...logs])).toEqual([...logs])
})

test('each tutorial calls its server at $BASE, set once in its first block', () => {
  for (const name of tutorials) {
    const blocks = blocksOf(read(name)).filter(runs)
    expect({ name, first: blocks[0]!.text.split('\n')[0] }).toEqual({ name, first: 'BASE=${BASE:-http://localhost:3000}' })
    const hardCoded = blocks.flatMap((block) => block.text.split('\n')).filter((line) => line.includes('localhost:3000') && !line.startsWith('BASE=${BASE:-'))
    expect({ name, hardCoded }).toEqual({ name, hardCoded: [] })
  }
})

test("a tutorial's config block is named as the text says it is saved and as its server is started with, and git ignores it", () => {
  const configs: string[] = []
  for (const name of tutorials) {
    const markdown = read(name)
    const named = blocksOf(markdown).flatMap((block) => (/^json\s+\S+\.json$/.test(block.info) ? [block.info.split(/\s+/)[1]!] : []))
    expect(named.length).toBeLessThanOrEqual(1)
    if (!named.length) continue
    const file = named[0]!
    // Not the checkout's own service.config.json, which the tutorial would overwrite.
    expect(file).not.toBe('service.config.json')
    expect({ name, saved: [...markdown.matchAll(/saved as\s+`([^`]+)`/g)].map((match) => match[1]) }).toEqual({ name, saved: [file] })
    expect({ name, started: blocksOf(markdown).find((block) => block.skipped)!.text.includes(`SERVICE_CONFIG=${file} `) }).toEqual({ name, started: true })
    configs.push(file)
  }
  expect(configs.length).toBeGreaterThanOrEqual(3)
  expect(ignoredByGit(configs)).toEqual(configs)
})

test('docs-check.sh fails a tutorial that leaves its server running, and stops that server', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tutorial-stop-'))
  try {
    const pidFile = join(dir, 'server.pid')
    const tutorial = [
      // One plugin: the smallest server.
      '```json small.config.json',
      '{"plugins": {"enabled": ["auth"]}}',
      '```',
      '<!-- docs-check: skip -->',
      '```sh',
      'SERVICE_CONFIG=small.config.json node_modules/.bin/bun entries/bun.ts > "$SERVICE_LOG" 2>&1 &',
      'SERVICE_PID=$!',
      '```',
      '```sh',
      'BASE=${BASE:-http://localhost:3000}',
      'curl -sS --fail-with-body "$BASE/health"',
      `echo "$SERVICE_PID" > ${pidFile}`,
      '```',
    ].join('\n')
    writeFileSync(join(dir, 'runs-on.md'), tutorial)
    const run = Bun.spawnSync(['bash', join(root, 'scripts', 'docs-check.sh'), join(dir, 'runs-on.md')], { cwd: root })
    const output = run.stdout.toString() + run.stderr.toString()
    expect(output).toContain(`FAIL ${join(dir, 'runs-on.md')}`)
    expect(output).toContain('its server still ran after the last block')
    expect(run.exitCode).toBe(1)
    // The blocks ran against the server (it wrote its PID), which is gone now.
    const pid = Number(readFileSync(pidFile, 'utf8'))
    expect(pid).toBeGreaterThan(0)
    expect(exited(pid)).toBe(true)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}, 300_000)
