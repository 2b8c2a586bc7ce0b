/** The introduction at the top of the OpenAPI document. */
export const description = `
Multi-tenant work tracking. Every request carries \`Authorization: Bearer <API key>\`; a key holds
scopes, and project access of its owner still applies.

**Envelope.** Every \`/api/v1\` response is \`{"data": …, "errors": [], "meta": {"requestId": "…"}}\`
(the request id is also the \`X-Request-Id\` header). Errors are
\`{"data": null, "errors": [{"code", "message", "field"?}], "meta": {"requestId"}}\`.

**Errors.** 400 \`BAD_REQUEST\` (invalid JSON, query parameter, size over 1 MiB or a field's limit;
\`field\` is the dotted JSON path or the parameter name) · 401 \`UNAUTHORIZED\` · 403
\`INSUFFICIENT_SCOPE\` (message lists the missing scopes) or \`FORBIDDEN\` · 404 \`NOT_FOUND\`
(unknown, or invisible to you: existence is never revealed) · 405 \`METHOD_NOT_ALLOWED\`
(the path exists under the methods \`Allow\` lists) · 409 \`CONFLICT\` · 412 \`PRECONDITION_FAILED\` · 422
\`IDEMPOTENCY_MISMATCH\` · 429 \`RATE_LIMITED\` · 500 \`INTERNAL\` · 503 \`UNAVAILABLE\`.
Checks run in this order: key, scope, input, visibility, access level, conflict.

**Pagination.** \`page\` is zero-based (default 0), \`size\` is 1..100 (default 20); \`meta\` carries
\`page\`, \`size\`, \`totalItems\`, \`totalPages\`. A page past the end is empty.

**HTTP conventions.** Every GET answers with an \`ETag\`: send it back as \`If-None-Match\` for a
\`304 Not Modified\` without a body while the answer is unchanged, or as \`If-Match\` on an update or
delete that accepts it (412 if the resource changed since). A list carries \`Link\` (RFC 8288: \`first\`, \`prev\`,
\`next\`, \`last\`), a 201 carries \`Location\`. With the per-key rate limit on, every answer carries
\`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\` and \`X-RateLimit-Reset\`; a 429 carries \`Retry-After\`.
A POST, PATCH or PUT body must be \`application/json\`; a POST may carry an \`Idempotency-Key\`.
`.trim()
