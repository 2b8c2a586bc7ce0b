/**
 * No import cycles: in the core (src/) none at all, type-only imports included (a circle there is
 * a design knot: the envelope, the list cache and the conventions once imported each other); in
 * the core and the plugins together none that runs (value imports), since a cycle decides module
 * order by accident. The test of the test builds a cycle and finds it.
 */
import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

const ROOT = resolve(import.meta.dir, '../..')

type Graph = Map<string, string[]>

/** The relative imports and re-exports of each file (`import type` left out unless `types`). */
function graphOf(files: Map<string, string>, types: boolean): Graph {
  const graph: Graph = new Map()
  for (const [file, text] of files) {
    const targets: string[] = []
    for (const match of text.matchAll(/^(?:import|export)\s+(type\s+)?(?:[^'"]*?\sfrom\s+)?['"](\.[^'"]+)['"]/gm)) {
      if (match[1] && !types) continue
      const target = resolve(dirname(file), match[2]!)
      targets.push(target.endsWith('.ts') ? target : `${target}.ts`)
    }
    graph.set(file, targets.filter((target) => files.has(target)))
  }
  return graph
}

/** Every cycle found by a depth-first walk, as the files around it. */
function cyclesOf(graph: Graph): string[][] {
  const done = new Set<string>()
  const path: string[] = []
  const onPath = new Set<string>()
  const cycles: string[][] = []
  const visit = (file: string) => {
    done.add(file)
    path.push(file)
    onPath.add(file)
    for (const next of graph.get(file) ?? []) {
      if (onPath.has(next)) cycles.push([...path.slice(path.indexOf(next)), next])
      else if (!done.has(next)) visit(next)
    }
    path.pop()
    onPath.delete(file)
  }
  for (const file of graph.keys()) if (!done.has(file)) visit(file)
  return cycles
}

function sources(...folders: string[]): Map<string, string> {
  const files = new Map<string, string>()
  const walk = (folder: string) => {
    for (const name of readdirSync(folder)) {
      const path = join(folder, name)
      if (statSync(path).isDirectory()) walk(path)
      else if (path.endsWith('.ts')) files.set(path, readFileSync(path, 'utf8'))
    }
  }
  for (const folder of folders) walk(join(ROOT, folder))
  return files
}

const named = (cycles: string[][]) => cycles.map((cycle) => cycle.map((file) => relative(ROOT, file)).join(' → '))

describe('import cycles', () => {
  test('the core has none, type imports included', () => {
    expect(named(cyclesOf(graphOf(sources('src'), true)))).toEqual([])
  })

  test('the core and the plugins have no value-import cycle', () => {
    expect(named(cyclesOf(graphOf(sources('src', 'plugins'), false)))).toEqual([])
  })

  test('the check finds a cycle when there is one (and skips type-only ones when asked)', () => {
    const files = new Map([
      ['/x/a.ts', "import { b } from './b'\n"],
      ['/x/b.ts', "import type { C } from './c'\nexport const b = 1\n"],
      ['/x/c.ts', "export { a } from './a'\nexport type C = 1\n"],
    ])
    expect(named(cyclesOf(graphOf(files, true))).length).toBe(1)
    expect(cyclesOf(graphOf(files, false))).toEqual([])
  })
})
