/**
 * The README and the documentation under docs/ are read in a clone: every file or folder of the
 * repository they name exists, they name nothing outside the repository (the README once pointed
 * at the product's contract document, which a clone lacks), and every link between them lands on
 * a file and a heading that exist.
 */
import { expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

const root = join(import.meta.dir, '..', '..')
const readme = readFileSync(join(root, 'README.md'), 'utf8')
/** `path → text` of README.md and every docs/**\/*.md (paths from the repository's root). */
const documents = new Map(['README.md', ...new Bun.Glob('docs/**/*.md').scanSync({ cwd: root })].sort().map((path) => [path, readFileSync(join(root, path), 'utf8')]))

/** The text without fenced code blocks and inline code, where a `](` or `#` is not markdown. */
function prose(text: string): string {
  return text.replace(/^```[^\n]*\n[\s\S]*?^```[ \t]*$/gm, '').replace(/`[^`\n]*`/g, '')
}

/** The anchors GitHub gives a document's headings (`## API overview (\`/api/v1\`)` → `api-overview-apiv1`). */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>()
  const result = new Set<string>()
  for (const [, heading] of text.replace(/^```[^\n]*\n[\s\S]*?^```[ \t]*$/gm, '').matchAll(/^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$/gm)) {
    const slug = heading!.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-')
    const count = seen.get(slug) ?? 0
    seen.set(slug, count + 1)
    result.add(count ? `${slug}-${count}` : slug)
  }
  return result
}

test('docs/ holds the reference documents, each read from the README', () => {
  expect(documents.size).toBeGreaterThan(8)
  for (const path of documents.keys()) if (path !== 'README.md' && !path.startsWith('docs/tutorials/')) expect(readme).toContain(`](${path})`)
})

test('the README and the docs point at nothing outside the repository', () => {
  // A docs file reaches the root with `../`; resolved from its own folder, it must stay in the repository.
  const outside = [...documents].flatMap(([path, text]) =>
    (text.match(/(?:^|[\s`(])\.\.\/[^\s`)]*/gm) ?? [])
      .map((match) => match.replace(/^[\s`(]/, ''))
      .filter((target) => relative(root, resolve(root, dirname(path), target)).startsWith('..'))
      .map((target) => `${path}: ${target}`),
  )
  expect(outside).toEqual([])
})

test('every repository path the README and the docs name in backticks exists', () => {
  // Paths in backticks are written from the repository's root, in docs/ as in the README.
  const named = [...documents].flatMap(([path, text]) =>
    [...text.matchAll(/`((?:src|plugins|tests|bench|scripts|entries|migrations|docs|\.ci)\/[\w./-]*|Dockerfile|\.dockerignore|\.spectral\.yaml|redocly\.yaml|service\.config\.json|package\.json)`/g)].map((match) => ({ path, named: match[1]! })),
  )
  expect(named.length).toBeGreaterThan(20)
  expect(named.filter((entry) => entry.path === 'README.md').length).toBeGreaterThan(3)
  // What git ignores (test artifacts) exists only once something has written it: named, not required.
  const ignored = new Set(readFileSync(join(root, '.gitignore'), 'utf8').split('\n').map((line) => line.trim()))
  const missing = named.filter((entry) => !ignored.has(entry.named) && !existsSync(join(root, entry.named.replace(/\/$/, '')))).map((entry) => `${entry.path}: ${entry.named}`)
  expect([...new Set(missing)]).toEqual([])
})

test('every relative link of the README and the docs lands on a file, and on a heading it has', () => {
  const links = [...documents].flatMap(([path, text]) =>
    [...prose(text).matchAll(/\]\(([^)\s]+)\)|<img [^>]*src="([^"]+)"/g)].map((match) => ({ path, target: (match[1] ?? match[2])! })),
  )
  const relativeLinks = links.filter((link) => !/^[a-z][a-z+.-]*:/i.test(link.target))
  expect(relativeLinks.length).toBeGreaterThan(20)
  const broken = relativeLinks.filter(({ path, target }) => {
    const [file, anchor] = target.split('#') as [string, string | undefined]
    const resolved = file ? join(dirname(path), file) : path
    if (relative(root, resolve(root, resolved)).startsWith('..') || !existsSync(join(root, resolved))) return true
    if (anchor === undefined || !resolved.endsWith('.md')) return false
    return !anchors(documents.get(resolved) ?? readFileSync(join(root, resolved), 'utf8')).has(anchor)
  })
  expect(broken.map(({ path, target }) => `${path}: ${target}`)).toEqual([])
})

test('no file of the repository points at documents a clone lacks', () => {
  // The contract and the notes the project was built from live beside the repository, not in it:
  // only .ci/run (which installs Citus from there) may name that folder.
  const tracked = Bun.spawnSync(['git', 'ls-files'], { cwd: root }).stdout.toString().split('\n').filter((path) => path && !path.startsWith('.ci/') && !path.endsWith('.png'))
  expect(tracked.length).toBeGreaterThan(100)
  const offenders = tracked.filter((path) => /\.\.\/shared\/|\/work\/shared|shared\/notes\/|SPEC\.md|SPEC \u00a7/.test(readFileSync(join(root, path), 'utf8')))
  expect(offenders).toEqual([])
})

test("the files the README's client-generation command writes are ignored by git", () => {
  const command = readme.split('\n').find((line) => line.includes('openapi-typescript') && line.startsWith('curl'))
  expect(command).toBeDefined()
  const written = [...command!.matchAll(/(?:>|-o)\s+([\w./-]+)/g)].map((match) => match[1]!)
  expect(written).toEqual(['openapi.json', 'api.d.ts'])
  const check = Bun.spawnSync(['git', 'check-ignore', '--no-index', ...written], { cwd: root })
  expect(check.stdout.toString().trim().split('\n')).toEqual(written)
})
