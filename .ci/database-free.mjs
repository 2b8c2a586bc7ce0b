// Prints the test files (arguments) that use no test database: neither they nor the test helpers
// they import (transitively) read TEST_DATABASE_URL. `.ci/run` runs them once, on the embedded
// database's lane, rather than again on the PostgreSQL server's, where they would prove nothing more.
import { existsSync, readFileSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'

const verdicts = new Map()
function usesDatabase(file) {
  if (verdicts.has(file)) return verdicts.get(file)
  verdicts.set(file, false) // an import cycle adds nothing
  const text = readFileSync(file, 'utf8')
  let uses = /TEST_DATABASE_URL|usingServer/.test(text)
  for (const [, specifier] of text.matchAll(/from '(\.[^']+)'/g)) {
    const base = resolve(dirname(file), specifier)
    const target = [`${base}.ts`, base, `${base}/index.ts`].find((candidate) => existsSync(candidate) && statSync(candidate).isFile())
    if (target?.includes('/tests/') && usesDatabase(target)) uses = true
  }
  verdicts.set(file, uses)
  return uses
}
for (const file of process.argv.slice(2)) if (!usesDatabase(resolve(file))) console.log(file)
