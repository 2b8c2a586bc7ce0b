/**
 * 405 for a path that exists under other methods: `DELETE /api/v1/users/me` is answered 405 with
 * `Allow: GET, HEAD`, not 404 (RFC 9110 §15.5.6), so a client learns it used the wrong method.
 * Built once from the compiled routes; consulted only when no route matched.
 */

interface Pattern {
  pattern: RegExp
  methods: Set<string>
}

/** The route table as `{method, path}` pairs (Elysia's `app.routes`), with `:param` and `*` segments. */
export function allowedMethods(routes: ReadonlyArray<{ method: string; path: string }>): (path: string) => string[] | undefined {
  const byPath = new Map<string, Set<string>>()
  for (const route of routes) {
    const method = route.method.toUpperCase()
    if (method === 'ALL' || method === 'WS') continue
    const methods = byPath.get(route.path) ?? new Set<string>()
    methods.add(method)
    if (method === 'GET') methods.add('HEAD')
    byPath.set(route.path, methods)
  }
  const patterns: Pattern[] = [...byPath].map(([path, methods]) => ({ pattern: compile(path), methods }))
  return (path) => {
    const methods = new Set<string>()
    for (const entry of patterns) if (entry.pattern.test(path)) for (const method of entry.methods) methods.add(method)
    return methods.size ? [...methods].sort() : undefined
  }
}

function compile(path: string): RegExp {
  const source = path
    .split('/')
    .map((segment) => (segment.startsWith(':') ? '[^/]+' : segment === '*' ? '.*' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/')
  return new RegExp(`^${source}$`)
}
