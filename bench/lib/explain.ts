/**
 * EXPLAIN (ANALYZE, BUFFERS) of a statement as the service runs it: prepared (the service's driver
 * prepares every statement) and executed 6 times first, so the plan is the one the plan cache
 * settles on (a generic plan when PostgreSQL finds it no dearer: its conditions then show `$n`).
 */
import type { Explained } from '../figures'
import { withClient } from './database'

/** A parameter as an SQL literal, for EXECUTE of a prepared statement. */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'null'
  if (typeof value === 'number') return String(value)
  const text = Array.isArray(value) ? `{${value.map((item) => `"${String(item).replace(/["\\]/g, '\\$&')}"`).join(',')}}` : String(value)
  return `'${text.replace(/'/g, "''")}'`
}

/** Each statement's plan and execution time, by the name it is given. */
export function explainPrepared<Name extends string>(url: string, statements: Array<{ name: Name; text: string; values: unknown[] }>): Promise<Partial<Record<Name, Explained>>> {
  return withClient(url, async (sql) => {
    const explained: Partial<Record<Name, Explained>> = {}
    for (const [index, { name, text, values }] of statements.entries()) {
      const prepared = `bench_${index}`
      await sql.unsafe(`prepare ${prepared} as ${text}`)
      const execute = `execute ${prepared}(${values.map(literal).join(', ')})`
      for (let i = 0; i < 6; i++) await sql.unsafe(execute)
      const lines = (await sql.unsafe(`explain (analyze, buffers) ${execute}`)).map((row) => String(row['QUERY PLAN']))
      await sql.unsafe(`deallocate ${prepared}`)
      const plan = lines.join('\n')
      explained[name] = {
        ms: Number(/Execution Time: ([\d.]+) ms/.exec(plan)?.[1] ?? NaN),
        // A generic plan compares with the parameters themselves (`project_id = $1`); InitPlans' `returns $0` are no parameters.
        generic: lines.some((line) => /(Cond|Filter): .*\$\d/.test(line)),
        nodes: lines
          .filter((line, i) => i === 0 || /^\s*->/.test(line))
          .map((line) => line.replace(/^\s*->\s*/, '').replace(/\s+\(cost=.*$/, '').trim())
          .join(' → '),
        plan,
        statement: text.replace(/\s+/g, ' ').trim(),
      }
    }
    return explained
  })
}
