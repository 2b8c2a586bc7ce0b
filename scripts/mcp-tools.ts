/**
 * The MCP tool list of docs/api.md, made from the server itself: starts the service in-process on
 * an in-memory embedded database with every plugin, reads the tools its MCP server lists (each
 * plugin's `tools`, as registered at start-up) and writes them, name, scopes and description, between
 * the markers `<!-- mcp-tools:start -->` and `<!-- mcp-tools:end -->` of docs/api.md.
 * tests/architecture/mcp-tools-doc.test.ts fails when that section differs from the live server's
 * tools: a tool added, removed or reworded is fixed by running this again.
 *
 *   bun scripts/mcp-tools.ts            # print the section
 *   bun scripts/mcp-tools.ts --write    # rewrite it in docs/api.md
 *   bun scripts/mcp-tools.ts --check    # exit 1 (saying so) when docs/api.md's differs
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

export const API_DOC = join(import.meta.dir, '..', 'docs', 'api.md')
const START = '<!-- mcp-tools:start -->'
const END = '<!-- mcp-tools:end -->'

/** What the list shows of a tool. */
export interface ListedTool {
  name: string
  description: string
  scopes: readonly string[]
}

/** The section, markers included: one line per tool, in the order the server lists them. */
export function renderTools(tools: readonly ListedTool[]): string {
  const lines = tools.map((tool) => {
    const scopes = tool.scopes.length ? tool.scopes.map((scope) => `\`${scope}\``).join(', ') : 'no scope'
    return `- \`${tool.name}\` (${scopes}): ${tool.description.replace(/\s+/g, ' ').trim()}`
  })
  return [START, `<!-- Written by \`bun scripts/mcp-tools.ts --write\` from the server's tools (${tools.length}): change a tool's description in its plugin, then run it again. -->`, '', ...lines, '', END].join('\n')
}

/** The section of `markdown`, markers included; throws when the markers are missing. */
export function sectionOf(markdown: string): string {
  const start = markdown.indexOf(START)
  const end = markdown.indexOf(END)
  if (start < 0 || end < start) throw new Error(`docs/api.md has no ${START} … ${END} section`)
  return markdown.slice(start, end + END.length)
}

/** `markdown` with its section replaced by `section`. */
export const withSection = (markdown: string, section: string) => markdown.replace(sectionOf(markdown), () => section)

/** The tools of a service with every plugin on a fresh in-memory database, in the order its MCP server lists them. */
export async function serverTools(): Promise<ListedTool[]> {
  const { registry } = await import('../plugins')
  const { createService } = await import('../src/app')
  const { loadConfig } = await import('../src/config')
  const { createLogger } = await import('../src/log')
  // None of this shell's settings: every plugin, no config file, no database but its own.
  const config = loadConfig(registry, { raw: {}, env: { DATABASE_URL: 'pglite://memory' } })
  const service = await createService({ registry, config, log: createLogger('silent'), background: false })
  try {
    return service.core.tools.map(({ name, description, scopes }) => ({ name, description, scopes }))
  } finally {
    await service.stop()
  }
}

async function main(mode: string | undefined) {
  if (mode !== undefined && mode !== '--write' && mode !== '--check') {
    console.error('usage: bun scripts/mcp-tools.ts [--write | --check]')
    process.exit(2)
  }
  const section = renderTools(await serverTools())
  if (mode === undefined) return console.log(section)
  const markdown = readFileSync(API_DOC, 'utf8')
  if (sectionOf(markdown) === section) return console.log('docs/api.md: the MCP tool list is the server\'s')
  if (mode === '--check') {
    console.error("docs/api.md: the MCP tool list differs from the server's tools; run `bun scripts/mcp-tools.ts --write`")
    process.exit(1)
  }
  writeFileSync(API_DOC, withSection(markdown, section))
  console.log('docs/api.md: MCP tool list rewritten')
}

if (import.meta.main) {
  await main(process.argv[2])
  // Done: whatever a library still holds open does not keep the process.
  process.exit(0)
}
