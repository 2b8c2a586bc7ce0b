/**
 * The display API convention's kit (not API v1's envelope: success bodies as documented, errors
 * `{message, detail, field?}`): answers and the error handler (answers.ts), body checks (body.ts),
 * OpenAPI wording and the route builder (openapi.ts), the session macros (kit.ts).
 */
export * from './answers'
export * from './body'
export * from './kit'
export * from './openapi'
