/**
 * The plugin boundary, as checks a test runs over the source tree and the live schema:
 *  - imports: the core (src/) never imports plugins/ or entries/; a plugin imports another plugin
 *    only through a declared (or optional) dependency's index.ts, api.ts or schema.ts, and another
 *    plugin's schema.ts only from its own schema.ts (for foreign keys); the benchmarks (bench/)
 *    reach a plugin only through its api.ts;
 *  - SQL: every relation a plugin's SQL text names is its own table or read model, a read model of
 *    a declared dependency, or a core table;
 *  - schema: every relation belongs to exactly one owner; foreign keys point at own tables or a
 *    dependency's; a read model reads only its owner's tables and its owner's dependencies' read models.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'
import { getTableName, isTable } from 'drizzle-orm'
import type { AnyPlugin } from '../../src/plugin'

export interface PluginFacts {
  name: string
  dependencies: readonly string[]
  optionalDependencies: readonly string[]
  tables: readonly string[]
  readModels: readonly string[]
}

/** What the checks need of a manifest. */
export const pluginFacts = (plugin: AnyPlugin): PluginFacts => ({
  name: plugin.name,
  dependencies: plugin.dependencies ?? [],
  optionalDependencies: plugin.optionalDependencies ?? [],
  tables: Object.values(plugin.tables ?? {})
    .filter(isTable)
    .map((table) => getTableName(table)),
  readModels: Object.keys(plugin.readModels ?? {}),
})

/** Every .ts file under `dirs` (relative to `root`), with its text. */
export function sourceFiles(root: string, dirs: readonly string[]): Map<string, string> {
  const files = new Map<string, string>()
  const walk = (dir: string) => {
    for (const name of readdirSync(join(root, dir))) {
      const path = join(dir, name)
      if (statSync(join(root, path)).isDirectory()) walk(path)
      else if (name.endsWith('.ts')) files.set(path, readFileSync(join(root, path), 'utf8'))
    }
  }
  for (const dir of dirs) walk(dir)
  return files
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"`;]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g

/** The relative import specifiers of a file, resolved to paths from the root (`plugins/teams/api.ts`). */
export function importsOf(path: string, text: string): string[] {
  const found: string[] = []
  for (const match of text.matchAll(IMPORT)) {
    const specifier = match[1] ?? match[2]!
    if (specifier.startsWith('.')) found.push(resolveImport(path, specifier))
  }
  return found
}

/** A relative import specifier of the file `path`, resolved to a path from the root. */
function resolveImport(path: string, specifier: string): string {
  const resolved = normalize(join(dirname(path), specifier))
  if (resolved.endsWith('.ts')) return resolved
  // A folder import (`../plugins`) is its index.ts.
  return existsSync(`${resolved}.ts`) || !existsSync(resolved) ? `${resolved}.ts` : join(resolved, 'index.ts')
}

const pluginOf = (path: string) => (/^plugins\/([^/]+)\//.exec(path) ?? [])[1]

/** Every import edge that breaks the rules above, as `from → to: why`. */
export function importViolations(files: Map<string, string>, plugins: readonly PluginFacts[]): string[] {
  const byName = new Map(plugins.map((plugin) => [plugin.name, plugin]))
  const problems: string[] = []
  for (const [path, text] of files) {
    for (const target of importsOf(path, text)) {
      if (path.startsWith('src/')) {
        if (target.startsWith('plugins/') || target.startsWith('entries/')) problems.push(`${path} → ${target}: the core imports no plugin and no entry`)
        continue
      }
      const from = pluginOf(path)
      const to = pluginOf(target)
      if (!from || !to || from === to) continue
      const plugin = byName.get(from)
      if (!plugin) continue
      const file = target.slice(`plugins/${to}/`.length)
      if (![...plugin.dependencies, ...plugin.optionalDependencies].includes(to)) problems.push(`${path} → ${target}: "${from}" does not declare "${to}" as a dependency`)
      else if (!['index.ts', 'api.ts', 'schema.ts'].includes(file)) problems.push(`${path} → ${target}: only index.ts, api.ts and schema.ts of another plugin are its face`)
      else if (file === 'schema.ts' && !path.endsWith('/schema.ts')) problems.push(`${path} → ${target}: another plugin's tables are for foreign keys in schema.ts only; read through its read models or public face`)
    }
  }
  return problems
}

/**
 * Every import of bench/ that reaches into a plugin other than through its api.ts, as
 * `from → to: why`. The plugin list (plugins/index.ts) is no plugin's inside.
 */
export function benchImportViolations(files: Map<string, string>): string[] {
  const problems: string[] = []
  for (const [path, text] of files) {
    if (!path.startsWith('bench/')) continue
    for (const target of importsOf(path, text)) {
      const plugin = pluginOf(target)
      if (plugin && target !== `plugins/${plugin}/api.ts`) problems.push(`${path} → ${target}: a benchmark reaches a plugin only through its api.ts`)
    }
  }
  return problems
}

/** The text of every string and template literal of a TypeScript source (template expressions skipped). */
export function literals(text: string): string[] {
  const out: string[] = []
  let i = 0
  const n = text.length
  const readTemplate = (): string => {
    // at the character after the opening backtick
    let part = ''
    while (i < n) {
      const c = text[i]!
      if (c === '\\') {
        part += text.slice(i, i + 2)
        i += 2
      } else if (c === '`') {
        i++
        return part
      } else if (c === '$' && text[i + 1] === '{') {
        part += ' '
        i += 2
        let depth = 1
        while (i < n && depth > 0) {
          const d = text[i]!
          if (d === '{') depth++
          else if (d === '}') depth--
          else if (d === '`') {
            i++
            out.push(readTemplate())
            continue
          } else if (d === "'" || d === '"') {
            i++
            out.push(readQuoted(d))
            continue
          }
          i++
        }
      } else {
        part += c
        i++
      }
    }
    return part
  }
  const readQuoted = (quote: string): string => {
    let part = ''
    while (i < n && text[i] !== quote) {
      if (text[i] === '\\') {
        part += text.slice(i, i + 2)
        i += 2
      } else part += text[i++]
    }
    i++
    return part
  }
  while (i < n) {
    const c = text[i]!
    if (c === '/' && text[i + 1] === '/') {
      while (i < n && text[i] !== '\n') i++
    } else if (c === '/' && text[i + 1] === '*') {
      i = text.indexOf('*/', i + 2)
      i = i < 0 ? n : i + 2
    } else if (c === '`') {
      i++
      out.push(readTemplate())
    } else if (c === "'" || c === '"') {
      i++
      out.push(readQuoted(c))
    } else i++
  }
  return out
}

const SQL_RELATION = /\b(?:from|join|into|update|table)\s+(?:only\s+)?"?([a-z_][a-z0-9_]*)"?/gi

/** Relations among `known` that a literal names in SQL position (after FROM, JOIN, INTO, UPDATE, TABLE) or as its whole text. */
export function relationsNamed(literal: string, known: ReadonlySet<string>): string[] {
  const names = new Set<string>()
  if (known.has(literal.trim())) names.add(literal.trim())
  for (const match of literal.matchAll(SQL_RELATION)) if (known.has(match[1]!.toLowerCase())) names.add(match[1]!.toLowerCase())
  return [...names]
}

/** What each plugin may name in SQL: its tables and read models, its dependencies' read models, the core's tables. */
export function allowedRelations(plugin: PluginFacts, plugins: readonly PluginFacts[], coreTables: readonly string[]): Set<string> {
  const byName = new Map(plugins.map((each) => [each.name, each]))
  const allowed = new Set([...plugin.tables, ...plugin.readModels, ...coreTables])
  for (const dependency of [...plugin.dependencies, ...plugin.optionalDependencies]) for (const model of byName.get(dependency)?.readModels ?? []) allowed.add(model)
  return allowed
}

/** Every relation a plugin's SQL text names without being allowed to, as `file: relation`. */
export function sqlViolations(files: Map<string, string>, plugins: readonly PluginFacts[], coreTables: readonly string[]): string[] {
  const known = new Set(plugins.flatMap((plugin) => [...plugin.tables, ...plugin.readModels]))
  const problems: string[] = []
  for (const plugin of plugins) {
    const allowed = allowedRelations(plugin, plugins, coreTables)
    for (const [path, text] of files) {
      if (pluginOf(path) !== plugin.name || path.endsWith('/schema.ts')) continue
      // Plugin names (a manifest's name and dependency lists) are not relations, though some are spelt alike.
      const code = text.replace(/\b(?:optionalDependencies|dependencies)\s*:\s*\[[^\]]*\]|\bname\s*:\s*'[^']*'/g, '')
      for (const literal of literals(code))
        for (const relation of relationsNamed(literal, known)) if (!allowed.has(relation)) problems.push(`${path}: "${plugin.name}" names "${relation}", which is neither its own nor a read model of a dependency`)
    }
  }
  return [...new Set(problems)]
}

export const relativeTo = (root: string, path: string) => relative(root, path)
