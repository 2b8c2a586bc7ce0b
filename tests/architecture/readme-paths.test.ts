/**
 * The README is read in a clone: every file or folder of the repository it names exists, and it
 * names nothing outside the repository (it once pointed at the product's contract document, which a clone lacks).
 */
import { expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const root = join(import.meta.dir, '..', '..')
const readme = readFileSync(join(root, 'README.md'), 'utf8')

test('the README points at nothing outside the repository', () => {
  expect(readme.match(/(?:^|[\s`(])\.\.\/[^\s`)]*/gm) ?? []).toEqual([])
})

test('every repository path the README names in backticks exists', () => {
  const named = [...readme.matchAll(/`((?:src|plugins|tests|bench|scripts|entries|migrations|docs|\.ci)\/[\w./-]*|Dockerfile|\.dockerignore|\.spectral\.yaml|redocly\.yaml|service\.config\.json|package\.json)`/g)].map((match) => match[1]!)
  expect(named.length).toBeGreaterThan(20)
  // What git ignores (test artifacts) exists only once something has written it: named, not required.
  const ignored = new Set(readFileSync(join(root, '.gitignore'), 'utf8').split('\n').map((line) => line.trim()))
  const missing = [...new Set(named)].filter((path) => !ignored.has(path) && !existsSync(join(root, path.replace(/\/$/, ''))))
  expect(missing).toEqual([])
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
