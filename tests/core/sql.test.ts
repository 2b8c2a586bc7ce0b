import { describe, expect, test } from 'bun:test'
import { sql, type SQL } from 'drizzle-orm'
import { PgDialect } from 'drizzle-orm/pg-core'
import fc from 'fast-check'
import { isoFromText } from '../../src/sql'
import { toQuery } from '../../src/statements'

describe('isoFromText', () => {
  test.each([
    ['2026-11-21 23:41:23.422952+00', '2026-11-21T23:41:23.422Z'],
    ['2026-11-21 23:41:23.42+00', '2026-11-21T23:41:23.420Z'],
    ['2026-11-21 23:41:23.4+00', '2026-11-21T23:41:23.400Z'],
    ['2026-11-21 23:41:23+00', '2026-11-21T23:41:23.000Z'],
    ['2026-11-21 23:41:23.999999+00', '2026-11-21T23:41:23.999Z'],
    ['2026-11-22 01:41:23.5+02', '2026-11-21T23:41:23.500Z'],
  ])('%s → %s (as Date#toISOString writes it)', (text, iso) => {
    expect(isoFromText(text)).toBe(iso)
  })
})

describe('toQuery', () => {
  /** A random fragment of the pieces statements are made of (text, nested and joined fragments, bound values, placeholders), and some it leaves to the dialect. */
  const fragment: fc.Arbitrary<SQL> = fc.letrec<{ node: SQL }>((tie) => ({
    node: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.string({ maxLength: 8 }).map((text) => sql.raw(text)),
      fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null), fc.constant(undefined), fc.date({ noInvalidDate: true })).map((value) => sql`v = ${value}`),
      fc.array(fc.integer(), { maxLength: 3 }).map((values) => sql`a = ${sql.param(values)}`),
      fc.array(fc.integer(), { maxLength: 3 }).map((values) => sql`a in ${values}`),
      fc.constantFrom('organization', 'project').map((name) => sql`p = ${sql.placeholder(name)}`),
      fc.string({ maxLength: 4 }).map((value) => sql`i = ${sql.param(value)}`.inlineParams()),
      fc.array(tie('node'), { maxLength: 4 }).map((parts) => sql.join(parts, sql` and `)),
      fc.tuple(tie('node'), tie('node')).map(([a, b]) => sql`(${a} or ${b})`),
    ),
  })).node

  test('writes what the dialect writes, for any fragment', () => {
    const dialect = new PgDialect()
    fc.assert(
      fc.property(fragment, (query) => {
        const { sql: text, params } = dialect.sqlToQuery(query)
        const written = toQuery(query)
        expect({ sql: written.sql, params: written.params }).toEqual({ sql: text, params })
      }),
      { numRuns: 2000 },
    )
  })
})
