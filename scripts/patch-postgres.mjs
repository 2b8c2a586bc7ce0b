/**
 * postinstall: fixes a wrong-answer bug of postgres.js 3.4.x (porsager/postgres#1119, #1181, no
 * release carries the fix yet). When a query fails after some of its rows arrived (a statement
 * timeout, a cast error on row 4), the connection's row counter is not reset, so the next query on
 * that connection resolves with holes before its rows: `const [row] = …` reads `undefined`, and an
 * access check answers 404 for a project that exists. The fix resets the counter whenever a query
 * ends (ReadyForQuery), in each of the package's three builds. Idempotent; warns (without failing
 * the install) when the code no longer looks as expected. tests/core/postgres-driver.test.ts
 * proves the behaviour on a PostgreSQL server.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const root = join(import.meta.dirname, '..', 'node_modules', 'postgres')
const BEFORE = '    query = results = errorResponse = null\n    result = new Result()\n'
const AFTER = '    query = results = errorResponse = null\n    result = new Result()\n    rows = 0 // worktrack: scripts/patch-postgres.mjs\n'

for (const build of ['src', 'cjs/src', 'cf/src']) {
  const file = join(root, build, 'connection.js')
  if (!existsSync(file)) continue
  const text = readFileSync(file, 'utf8')
  if (text.includes(AFTER)) continue
  if (!text.includes(BEFORE)) {
    console.warn(`patch-postgres: ${file} has changed; the row counter fix was not applied (check whether the new version fixes porsager/postgres#1119)`)
    continue
  }
  writeFileSync(file, text.replace(BEFORE, AFTER))
}
