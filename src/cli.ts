/**
 * The operator CLI: `npm run --silent cli -- <command> [--flag value …]`, on the same
 * DATABASE_URL as the server. Prints exactly one JSON object on stdout; on failure a JSON
 * object with `error` on stderr and a non-zero exit. `--help` (or `-h`) anywhere prints the
 * usage of what precedes it instead, as text on stdout, and exits 0.
 */
import { createService, type Service } from './app'
import { loadConfig } from './config'
import { readControl, runThrough, type CommandOutcome } from './control'
import { DatabaseInUse } from './db'
import { ApiError } from './http/errors'
import { createLogger } from './log'
import type { AnyPlugin, CliCommand } from './plugin'

const INVOCATION = 'npm run --silent cli --'
const HELP_FLAGS = new Set(['--help', '-h'])

class UsageError extends Error {}

/** Splits `org create --name Acme` into the command and its flags; `help` is set by --help, -h or a leading `help`. */
export function parseArguments(argv: readonly string[]): { command: string; flags: Record<string, string>; help: boolean } {
  const words: string[] = []
  const flags: Record<string, string> = {}
  let help = argv[0] === 'help'
  for (let i = help ? 1 : 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (HELP_FLAGS.has(arg)) help = true
    else if (arg.startsWith('--')) {
      const [name, inline] = arg.slice(2).split(/=(.*)/s, 2) as [string, string | undefined]
      const value = inline ?? argv[i + 1]
      // `--user --help` asks for help; it does not name a user "--help".
      if (inline === undefined && value !== undefined && HELP_FLAGS.has(value)) continue
      if (value === undefined) {
        if (help) continue
        throw new UsageError(`flag --${name} needs a value`)
      }
      if (inline === undefined) i++
      flags[name] = value
    } else words.push(arg)
  }
  return { command: words.join(' '), flags, help }
}

function commandsOf(registry: readonly AnyPlugin[]): Array<[string, CliCommand]> {
  return registry.flatMap((plugin) => Object.entries(plugin.cli ?? {}))
}

function unknownCommand(registry: readonly AnyPlugin[], command: string): UsageError {
  const known = `commands: ${commandsOf(registry).map(([name]) => name).join(', ')}; --help shows usage`
  return new UsageError(command === '' ? `no command given (${known})` : `unknown command "${command}" (${known})`)
}

function findCommand(registry: readonly AnyPlugin[], command: string): { plugin: AnyPlugin; definition: CliCommand } {
  for (const plugin of registry) {
    const definition = plugin.cli?.[command]
    if (definition) return { plugin, definition }
  }
  throw unknownCommand(registry, command)
}

function checkFlags(command: string, definition: CliCommand, flags: Record<string, string>) {
  for (const name of Object.keys(flags))
    if (!(name in definition.flags))
      throw new UsageError(`unknown flag --${name} for "${command}" (flags: ${Object.keys(definition.flags).map((flag) => `--${flag}`).join(', ')})`)
  for (const [name, flag] of Object.entries(definition.flags))
    if (flag.required && !(name in flags)) throw new UsageError(`"${command}" needs --${name} (${flag.description})`)
}

/** Lines of a two-column table, the first column padded to its widest cell. */
function columns(rows: ReadonlyArray<readonly [string, string]>): string[] {
  const width = Math.max(...rows.map(([left]) => left.length))
  return rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`)
}

/** The usage of one command: its synopsis, then every flag with its description, required ones marked. */
export function commandUsage(command: string, definition: CliCommand): string {
  const flags = Object.entries(definition.flags)
  const synopsis = flags.map(([name, flag]) => (flag.required ? `--${name} ${name.toUpperCase()}` : `[--${name} ${name.toUpperCase()}]`))
  return [
    `usage: ${INVOCATION} ${command} ${synopsis.join(' ')}`.trimEnd(),
    '',
    definition.description,
    '',
    'flags:',
    ...columns([...flags.map(([name, flag]) => [`--${name}`, `${flag.required ? 'required' : 'optional'}  ${flag.description}`] as const), ['--help, -h', `${' '.repeat(10)}Show this help and exit.`]]),
    '',
    'Prints one JSON object on stdout; on failure a JSON object with "error" on stderr and a non-zero exit.',
    '',
  ].join('\n')
}

/** The top-level usage: every command (or those starting with `group`, e.g. `key`) with its description. */
export function overallUsage(registry: readonly AnyPlugin[], group = ''): string {
  const commands = commandsOf(registry).filter(([name]) => !group || name.startsWith(`${group} `))
  return [
    `usage: ${INVOCATION} ${group || '<command>'}${group ? ' <subcommand>' : ''} [--flag value …]`,
    '',
    'Operator commands, on the same DATABASE_URL as the server, whether or not it runs (a server on the',
    'embedded database runs them for the CLI). Each prints one JSON object on stdout; on failure a',
    'JSON object with "error" on stderr and a non-zero exit (2 for a usage mistake).',
    '',
    'commands:',
    ...columns(commands.map(([name, definition]) => [name, definition.description] as const)),
    '',
    `"${INVOCATION} <command> --help" shows a command's flags.`,
    '',
  ].join('\n')
}

/** Usage text for `command` (empty: everything; a first word such as `key`: that group). */
function usageFor(registry: readonly AnyPlugin[], command: string): string {
  if (command === '') return overallUsage(registry)
  const definition = commandsOf(registry).find(([name]) => name === command)?.[1]
  if (definition) return commandUsage(command, definition)
  if (commandsOf(registry).some(([name]) => name.startsWith(`${command} `))) return overallUsage(registry, command)
  throw unknownCommand(registry, command)
}

/**
 * Runs `action`, reporting its invalid-input errors on the flags they came from: with
 * `{ expiresAt: 'expires' }` an error on the service's field `expiresAt` names `--expires`.
 * Fields already spelled like their flag need no entry.
 */
export async function onFlags<T>(fields: Record<string, string>, action: () => Promise<T>): Promise<T> {
  try {
    return await action()
  } catch (error) {
    const field = error instanceof ApiError ? error.field : undefined
    const flag = field === undefined ? undefined : fields[baseField(field)]
    if (!(error instanceof ApiError) || flag === undefined) throw error
    const message = error.message.replaceAll(`"${field}"`, `--${flag}`).replaceAll(`"${baseField(field!)}"`, `--${flag}`)
    throw new ApiError(error.status, error.code, message, flag, error.headers, error.existingId)
  }
}

/** `scopes[0]` → `scopes`, `data.points` → `data`. */
const baseField = (field: string) => field.split(/[.[]/, 1)[0]!

/** The one-line error of a failed command: invalid input names the flag, its description and what was wrong. */
function errorBody(error: unknown, definition: CliCommand | undefined): Record<string, unknown> {
  const message = (error as Error)?.message ?? String(error)
  if (!(error instanceof ApiError)) return { error: message }
  const body: Record<string, unknown> = { error: message, code: error.code }
  const flag = error.field === undefined ? undefined : baseField(error.field)
  if (flag !== undefined && definition && flag in definition.flags) {
    const reason = message.replace(/^Invalid field (?:"[^"]*"|--\S+):\s*/, '')
    body.error = `invalid --${flag} (${definition.flags[flag]!.description}): ${reason}`
    body.flag = flag
  } else if (error.field) body.field = error.field
  if (error.existingId) body.existingId = error.existingId
  return body
}

/**
 * Runs one command (or the usage asked for) on the service `open` gives: its exit code and what it
 * prints. The CLI opens a service of its own; a server on the embedded database runs the commands
 * the CLI sends it (src/control.ts) on itself.
 */
export async function runCommand(
  registry: readonly AnyPlugin[],
  argv: readonly string[],
  open: () => Promise<{ service: Service; close(): Promise<void> }>,
): Promise<CommandOutcome> {
  let opened: { service: Service; close(): Promise<void> } | undefined
  let definition: CliCommand | undefined
  try {
    const { command, flags, help } = parseArguments(argv)
    if (help) return { code: 0, stdout: usageFor(registry, command), stderr: '' }
    const found = findCommand(registry, command)
    definition = found.definition
    checkFlags(command, definition, flags)
    opened = await open()
    if (!opened.service.plugins.some((plugin) => plugin.name === found.plugin.name)) throw new UsageError(`"${command}" needs the ${found.plugin.name} plugin, which is disabled`)
    const { context, bound } = opened.service.contextOf(found.plugin.name)
    // A command sees the scopes of the enabled plugins (the core lists every registered one):
    // what `key create --scopes all` grants and what the CLI accepts.
    const result = await definition.run({ ...context, scopes: context.enabledScopes }, flags, bound)
    return { code: 0, stdout: `${JSON.stringify(result)}\n`, stderr: '' }
  } catch (error) {
    if (error instanceof DatabaseInUse) throw error
    return { code: error instanceof UsageError ? 2 : 1, stdout: '', stderr: `${JSON.stringify(errorBody(error, definition))}\n` }
  } finally {
    await opened?.close()
  }
}

/**
 * The CLI: runs the command on a service of its own, or, when a server on this machine holds the
 * embedded database, through that server (it wrote a control file when it started listening).
 */
export async function runCli(registry: readonly AnyPlugin[], argv: readonly string[]): Promise<number> {
  let outcome: CommandOutcome
  try {
    outcome = await runCommand(registry, argv, async () => {
      const service = await createService({ registry, config: loadConfig(registry), log: createLogger(process.env.LOG_LEVEL ? undefined : 'warn'), background: false })
      return { service, close: () => service.stop() }
    })
  } catch (error) {
    const held = error as DatabaseInUse
    const control = readControl(held.dir, held.owner)
    const through = control && (await runThrough(control, argv))
    outcome = through ?? { code: 1, stdout: '', stderr: `${JSON.stringify({ error: held.message })}\n` }
  }
  process.stdout.write(outcome.stdout)
  process.stderr.write(outcome.stderr)
  return outcome.code
}
