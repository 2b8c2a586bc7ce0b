/**
 * `npm test` (scripts/test.ts) says how long the run should take and, as each file ends, how many
 * are done and how long is left, from the measured per-file durations; CI's flags (workers,
 * timings, the JUnit reporter, a list of files) still reach bun test, and its exit status is bun
 * test's. Run on a scratch folder of three small test files, one failing.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { makePlan, Progress, readArguments, startLine, wallTime } from '../../scripts/test'

const script = join(import.meta.dir, '..', '..', 'scripts', 'test.ts')
let dir: string

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'test-progress-'))
  mkdirSync(join(dir, 'tests'))
  mkdirSync(join(dir, '.ci'))
  for (const [name, body] of [
    ['a', 'expect(1 + 1).toBe(2)'],
    ['b', 'expect([1, 2]).toHaveLength(2)'],
    ['c', 'expect("fails on purpose").toBe("passes")'],
  ])
    writeFileSync(join(dir, 'tests', `${name}.test.ts`), `import { expect, test } from 'bun:test'\ntest('${name}', () => { ${body} })\n`)
  // Two of the three measured, as CI's file is for files it has not seen yet.
  writeFileSync(join(dir, '.ci', 'test-timings.json'), JSON.stringify({ version: 1, files: { 'tests/a.test.ts': 120_000, 'tests/b.test.ts': 60_000 } }))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** scripts/test.ts run in the scratch folder: its exit status and what it printed (stderr: bun test's results and the progress). */
function npmTest(...args: string[]) {
  const run = Bun.spawnSync([process.execPath, script, ...args], { cwd: dir, env: { ...process.env, NO_COLOR: '1' } })
  return { status: run.exitCode, out: run.stderr.toString() + run.stdout.toString(), lines: run.stderr.toString().split('\n') }
}

describe('the run', () => {
  test('says the expected duration first, then each file as it ends, one to three, with the time left until the last', () => {
    const { status, out, lines } = npmTest('--timeout', '30000')
    expect(status).toBe(1)
    expect(lines[0]).toBe('── bun test: 3 files, expected to take ~5 min (2 of them as measured in .ci/test-timings.json)')
    const progress = lines.filter((line) => line.startsWith('── file '))
    expect(progress.map((line) => line.split(' · ')[0])).toEqual(['── file 1 of 3 done', '── file 2 of 3 done', '── file 3 of 3 done'])
    expect(progress.slice(0, 2).every((line) => / · (~[\d.]+ (s|min)|under a second) left$/.test(line))).toBe(true)
    expect(progress[2]).not.toContain('left')
    // bun test's own output passes through: each file's heading and results, and its summary.
    for (const name of ['a', 'b', 'c']) expect(out).toContain(`tests/${name}.test.ts:`)
    expect(out).toContain('(fail) c')
    expect(out).toMatch(/Ran 3 tests across 3 files/)
  })

  test("CI's flags: workers, timings, the JUnit report and a list of files reach bun test", () => {
    const report = join(dir, 'junit.xml')
    const { status, lines } = npmTest('--timeout', '30000', '--parallel=2', '--no-isolate', '--timings=.ci/test-timings.json', '--reporter=junit', `--reporter-outfile=${report}`, 'tests/a.test.ts', 'tests/b.test.ts')
    expect(status).toBe(0)
    expect(lines[0]).toBe('── bun test: 2 files on 2 workers, expected to take ~2 min (each as measured in .ci/test-timings.json)')
    expect(lines.filter((line) => line.startsWith('── file ')).map((line) => line.split(' · ')[0])).toEqual(['── file 1 of 2 done', '── file 2 of 2 done'])
    expect(existsSync(report)).toBe(true)
    expect([...readFileSync(report, 'utf8').matchAll(/<testsuite name="tests\/[ab]\.test\.ts"/g)]).toHaveLength(2)
  })
})

describe('the expectation', () => {
  test("reads bun test's arguments: filters, workers, timings files; a flag's value is not a filter", () => {
    expect(readArguments(['--timeout', '30000', '--parallel=2', '--no-isolate', '--timings=.ci/test-timings.json', '--reporter', 'junit', '--reporter-outfile=x.xml', './tests/core', 'tests/a.test.ts'])).toEqual({
      filters: ['tests/core', 'tests/a.test.ts'],
      timings: ['.ci/test-timings.json'],
      ignore: [],
      workers: 2,
      parallel: true,
      unknowable: false,
    })
    expect(readArguments(['--parallel'], 6)).toMatchObject({ workers: 6, parallel: true })
    expect(readArguments(['--shard=1/3'])).toMatchObject({ unknowable: true })
  })

  test('schedules the files the slowest first on the first free worker, and counts unmeasured files as the median', () => {
    expect(wallTime([5, 4, 3, 3, 3], 2)).toBe(10)
    expect(wallTime([5, 4, 3, 3, 3], 1)).toBe(18)
    const plan = makePlan(['a', 'b', 'c', 'd'], 1, new Map([['a', 1_000], ['b', 3_000], ['c', 10_000]]), 'timings.json')
    expect(plan.expected.get('d')).toBe(3_000)
    expect(startLine(plan)).toBe('── bun test: 4 files, expected to take ~17 s (3 of them as measured in timings.json)')
  })

  test('corrects what is left by how fast the finished files went on this machine', () => {
    const plan = makePlan(['a', 'b'], 1, new Map([['a', 60_000], ['b', 60_000]]), 'timings.json')
    // Twice as slow as measured: a took 2 minutes, so b should take about 2 (damped by half a minute: 1.67).
    expect(new Progress(plan, 0).finished('a', 120_000)).toBe('── file 1 of 2 done · 2m00s so far · ~2 min left')
    expect(new Progress(plan, 0).finished('a', 60_000)).toBe('── file 1 of 2 done · 1m00s so far · ~60 s left')
  })
})
