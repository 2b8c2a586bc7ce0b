/**
 * The operator CLI: `npm run --silent cli -- <command> [--flag value …]`, on the same
 * DATABASE_URL as the server. Prints exactly one JSON object on stdout; on failure a JSON
 * object with `error` on stderr and a non-zero exit.
 */
import { createService } from './app'
import { loadConfig } from './config'
import { ApiError } from './http/errors'
import { createLogger } from './log'
import type { AnyPlugin, CliCommand } from './plugin'

class UsageError extends Error {}

/** Splits `org create --name Acme` into the command and its flags. */
export function parseArguments(argv: readonly string[]): { command: string; flags: Record<string, string> } {
  const words: string[] = []
  const flags: Record<string, string> = {}
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg.startsWith('--')) {
      const [name, inline] = arg.slice(2).split(/=(.*)/s, 2) as [string, string | undefined]
      const value = inline ?? argv[++i]
      if (value === undefined) throw new UsageError(`flag --${name} needs a value`)
      flags[name] = value
    } else words.push(arg)
  }
  return { command: words.join(' '), flags }
}

function findCommand(registry: readonly AnyPlugin[], command: string): { plugin: AnyPlugin; definition: CliCommand } {
  for (const plugin of registry) {
    const definition = plugin.cli?.[command]
    if (definition) return { plugin, definition }
  }
  const known = registry.flatMap((plugin) => Object.keys(plugin.cli ?? {}))
  throw new UsageError(`unknown command "${command}" (commands: ${known.join(', ')})`)
}

function checkFlags(command: string, definition: CliCommand, flags: Record<string, string>) {
  for (const name of Object.keys(flags))
    if (!(name in definition.flags)) throw new UsageError(`unknown flag --${name} for "${command}"`)
  for (const [name, flag] of Object.entries(definition.flags))
    if (flag.required && !(name in flags)) throw new UsageError(`"${command}" needs --${name} (${flag.description})`)
}

/** Runs one command; returns the process exit code. */
export async function runCli(registry: readonly AnyPlugin[], argv: readonly string[]): Promise<number> {
  let stop: (() => Promise<void>) | undefined
  try {
    const { command, flags } = parseArguments(argv)
    const { plugin, definition } = findCommand(registry, command)
    checkFlags(command, definition, flags)
    const config = loadConfig(registry)
    if (!config.enabled.has(plugin.name)) throw new UsageError(`"${command}" needs the ${plugin.name} plugin, which is disabled`)
    const service = await createService({ registry, config, log: createLogger(process.env.LOG_LEVEL ? undefined : 'warn'), background: false })
    stop = () => service.stop()
    const { context, bound } = service.contextOf(plugin.name)
    const result = await definition.run(context, flags, bound)
    process.stdout.write(`${JSON.stringify(result)}\n`)
    return 0
  } catch (error) {
    const body: Record<string, unknown> = { error: (error as Error)?.message ?? String(error) }
    if (error instanceof ApiError) {
      body.code = error.code
      if (error.field) body.field = error.field
      if (error.existingId) body.existingId = error.existingId
    }
    process.stderr.write(`${JSON.stringify(body)}\n`)
    return error instanceof UsageError ? 2 : 1
  } finally {
    await stop?.()
  }
}
