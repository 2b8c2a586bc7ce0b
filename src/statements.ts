/**
 * The way to write a hot statement: compose it from Drizzle `sql` fragments with named
 * placeholders, compile it once (Drizzle numbers the parameters) and run it as constant SQL text
 * with the values bound by name. Hot paths get bound fragments without building the query on every
 * call, and no `$n` crosses a file: a statement's parameter numbers are its own business.
 */
import { is, Placeholder, type SQL } from 'drizzle-orm'
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

/** Text of a fragment whose parameters are given as raw `$n` markers (for faces that still take SQL text). */
export const textOf = (fragment: SQL): string => dialect.sqlToQuery(fragment).sql
