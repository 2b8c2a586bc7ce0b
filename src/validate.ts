/**
 * Validation outside a route (CLI flags, MCP tool arguments, hand-parsed bodies) with the same
 * TypeBox models and the same 400 as Elysia's own route validation.
 */
import type { Static, TSchema } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { Value } from '@sinclair/typebox/value'
import { ApiError, type ErrorItem } from './http/errors'
// Registers the strict date and date-time formats before anything here is checked against them.
import './http/models'
import { itemsFromValueErrors } from './http/validation-items'

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>()

/** Thrown with every problem found, like a route's validation error. */
export class ValidationFailure extends ApiError {
  constructor(readonly items: ErrorItem[]) {
    super(400, 'BAD_REQUEST', items[0]!.message, items[0]!.field)
  }

  override toItems(): ErrorItem[] {
    return this.items
  }
}

/** Returns `value` typed as the schema (defaults applied), or throws a 400 naming the fields. */
export function validate<S extends TSchema>(schema: S, value: unknown): Static<S> {
  let check = compiled.get(schema)
  if (!check) {
    check = TypeCompiler.Compile(schema)
    compiled.set(schema, check)
  }
  // Defaults are written into `value` itself: copying a large input first was most of the cost of refusing it.
  const withDefaults = Value.Default(schema, value)
  if (check.Check(withDefaults)) return withDefaults as Static<S>
  const items = itemsFromValueErrors(check.Errors(withDefaults), 'field', 'input')
  throw new ValidationFailure(items)
}
