/**
 * The way to write a hot statement: compose it from Drizzle `sql` fragments with named
 * placeholders, compile it once (Drizzle numbers the parameters) and run it as constant SQL text
 * with the values bound by name. Hot paths get bound fragments without building the query on every
 * call, and no `$n` crosses a file: a statement's parameter numbers are its own business. A
 * statement whose shape depends on the request (a list's filters and order) is composed from bound
 * fragments and run with `runQuery`.
 */
import { is, noopEncoder, Param, Placeholder, SQL, sql, StringChunk } from 'drizzle-orm'
import { PgDialect } from 'drizzle-orm/pg-core'
import { queryText, type Executor } from './db'

/** A compiled statement: its text, and the placeholder each `$n` takes, in order. */
export interface CompiledStatement {
  text: string
  parameters: string[]
}

const dialect = new PgDialect()

/** Compiles `query`, whose parameters must all be placeholders (values are bound at each run). */
export function compileStatement(query: SQL): CompiledStatement {
  const { sql: text, params } = dialect.sqlToQuery(query)
  const parameters = params.map((param) => {
    if (!is(param, Placeholder)) throw new Error(`a compiled statement binds a value instead of a placeholder: ${String(param)}`)
    return param.name
  })
  return { text, parameters }
}

/** Runs a compiled statement with `values` by placeholder name. */
export function runStatement<T>(executor: Executor, statement: CompiledStatement, values: Record<string, unknown>): Promise<T[]> {
  return queryText<T>(executor, statement.text, bind(statement, values))
}

/** The statement's parameters, in order, from `values` by placeholder name. */
export function bind(statement: CompiledStatement, values: Record<string, unknown>): unknown[] {
  return statement.parameters.map((name) => {
    if (!(name in values)) throw new Error(`no value for the placeholder "${name}"`)
    return values[name]
  })
}

/**
 * Runs a fragment composed for this call: its bound values become its parameters, numbered by
 * Drizzle; its placeholders, if any, take `values` by name. For statements whose shape depends on
 * the request (a list's filters, order and cursor), where compiling once is not possible.
 */
export function runQuery<T>(executor: Executor, query: SQL, values: Record<string, unknown> = {}): Promise<T[]> {
  const { sql: text, params } = toQuery(query)
  return queryText<T>(executor, text, params.some((param) => is(param, Placeholder)) ? params.map((param) => (is(param, Placeholder) ? valueOf(values, param.name) : param)) : params)
}

/**
 * The text and parameters of `query`, as Drizzle's dialect writes them. A fragment made only of
 * text, nested fragments, bound values and placeholders (what statements here are made of) is
 * written directly, at a tenth of the dialect's cost (which traces, and copies its settings at
 * every level); any other piece (a table, a column, an inlined or encoded value, an array listed as
 * `($1, $2)`) is left to the dialect.
 */
export function toQuery(query: SQL): { sql: string; params: unknown[] } {
  const params: unknown[] = []
  const text: string[] = []
  const write = (chunks: readonly unknown[]): boolean => {
    for (const chunk of chunks) {
      if (chunk === undefined) continue
      if (typeof chunk !== 'object' || chunk === null || chunk instanceof Date) {
        text.push(`$${params.push(chunk)}`)
        continue
      }
      if (is(chunk, StringChunk)) for (const part of chunk.value) text.push(part)
      else if (is(chunk, SQL)) {
        if ((chunk as unknown as { shouldInlineParams: boolean }).shouldInlineParams || !write(chunk.queryChunks)) return false
      } else if (is(chunk, Param)) {
        const { value } = chunk
        if (chunk.encoder !== noopEncoder || (typeof value === 'object' && value !== null && (is(value, Placeholder) || is(value, SQL)))) return false
        text.push(`$${params.push(value)}`)
      } else if (is(chunk, Placeholder)) text.push(`$${params.push(chunk)}`)
      else return false
    }
    return true
  }
  return write([query]) ? { sql: text.join(''), params } : dialect.sqlToQuery(query)
}

function valueOf(values: Record<string, unknown>, name: string): unknown {
  if (!(name in values)) throw new Error(`no value for the placeholder "${name}"`)
  return values[name]
}

/** A value bound as one parameter, arrays included (Drizzle lists an array's elements otherwise: `($1, $2)`). */
export const param = (value: unknown): SQL => sql`${sql.param(value)}`
