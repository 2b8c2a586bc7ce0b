/**
 * Body checks of the display API, compiled once from the same TypeBox schemas the OpenAPI document
 * shows and run in the handler (no Elysia body schema, so nothing else runs per request): a
 * refused body is a 400 `invalidRequest` naming the first offending field and listing them all.
 */
import type { Static, TSchema } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { ValueErrorType } from '@sinclair/typebox/errors'
import { describeValueError, excerpt, isUnknownField, MAX_ERROR_ITEMS, pointerToField, throughUnions, type ValueErrorLike } from '../validation-items'
import { DisplayRefusal, type DisplayError } from './answers'

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>()

/**
 * Each offending field of `errors` (TypeBox value errors, `prefix` before their paths), at most
 * MAX_ERROR_ITEMS, as the display API reports it: `invalidRequest` naming the field (at most its
 * first 64 characters, as API v1 names it), in the same words as API v1. An error at the root (not
 * an object) is reported alone.
 */
export function displayProblems(errors: Iterable<ValueErrorLike>, prefix = '', seen = new Set<string>()): DisplayError[] {
  const problems: DisplayError[] = []
  for (const error of throughUnions(errors)) {
    const field = pointerToField(`${prefix}${error.path}`)
    if (field === '') return [{ message: 'invalidRequest', detail: error.type === ValueErrorType.Object ? 'The body must be a JSON object.' : `The body ${describeValueError(error)}.` }]
    if (seen.has(field)) continue
    seen.add(field)
    // A field name comes from the body: shown as API v1 shows it, never a 200,000-character echo.
    const shown = excerpt(field)
    problems.push({ message: 'invalidRequest', detail: `${shown} ${isUnknownField(error) ? 'is not a known field' : describeValueError(error)}.`, field: shown })
    if (seen.size >= MAX_ERROR_ITEMS) break
  }
  return problems
}

/** A 400 `invalidRequest` of every problem found: the first one's `{message, detail, field}`, and all of them in `errors`. */
export function invalidRequest(problems: readonly DisplayError[]): DisplayError {
  const all = problems.length ? problems : [{ message: 'invalidRequest', detail: 'The body is invalid.' }]
  return { ...all[0]!, errors: [...all] }
}

/**
 * Every problem of `body` against `schema` (compiled once), as the display API reports it:
 * `invalidRequest` naming the first field and listing all; null when the body is valid.
 */
export function checkBody(schema: TSchema, body: unknown): DisplayError | null {
  let check = compiled.get(schema)
  if (!check) {
    check = TypeCompiler.Compile(schema)
    compiled.set(schema, check)
  }
  if (check.Check(body)) return null
  return invalidRequest(displayProblems(check.Errors(body)))
}

/** `body` typed by `schema`, or a thrown 400 `invalidRequest` (checkBody's answer): for a kit handler. */
export function validBody<T extends TSchema>(schema: T, body: unknown): Static<T> {
  const problem = checkBody(schema, body)
  if (problem) throw new DisplayRefusal(400, problem)
  return body as Static<T>
}
