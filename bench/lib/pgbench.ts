/** pgbench runs of a service's own statements: the ceiling a benchmark's endpoint is compared with. */
import { rmSync, writeFileSync } from 'node:fs'
import { CONNECTIONS, DURATION_SECONDS } from './settings'

/** A statement compiled with named placeholders: its text (`$1`…) and the name each `$n` takes, in order. */
export interface NamedStatement {
  text: string
  parameters: string[]
}

/** A text as an SQL string literal, for baking a value into a pgbench script (pgbench's `\set` takes numbers only). */
export const sqlLiteral = (value: string) => `'${value.replaceAll("'", "''")}'`

/**
 * A statement as a pgbench command, its `$n` as pgbench variables of the same names (`:project`…),
 * or, for the names in `literals`, as those values baked in as SQL string literals.
 */
export function asPgbench(statement: NamedStatement, literals: Record<string, string> = {}): string {
  return `${statement.text.replace(/\$(\d+)/g, (_, n) => {
    const name = statement.parameters[Number(n) - 1]!
    return name in literals ? sqlLiteral(literals[name]!) : `:${name}`
  })};`
}

/** pgbench's options: clients (`-c`), threads (`-j`), measured seconds, variables (`-D`), and seconds of warm-up before the measured ones. */
export interface PgbenchOptions {
  clients?: number
  threads?: number
  duration?: number
  variables?: Record<string, string>
  /**
   * Seconds run before the measured ones in the same run, on the same connections (`-T` warm-up +
   * duration, `-P 1`): the TPS is then that of the progress lines after the warm-up. For scripts
   * whose statements take long to settle on each connection (each prepared statement is planned
   * anew on each of its first 5 runs before PostgreSQL may keep a generic plan).
   */
  warmup?: number
}

/**
 * Runs pgbench (`-M prepared`) with a custom script and returns transactions per second. Given
 * several scripts, each is its own file given with weight 1 (`-f file@1`): every transaction runs
 * one of them, picked at random with equal weights, and the TPS is of them all.
 */
export async function pgbench(databaseUrl: string, script: string | readonly string[], options: PgbenchOptions = {}): Promise<number> {
  const stem = `/tmp/worktrack-pgbench-${process.pid}-${Math.random().toString(36).slice(2, 8)}`
  const scripts = typeof script === 'string' ? [script] : script
  if (!scripts.length) throw new Error('pgbench needs a script')
  const files = scripts.map((_, i) => (typeof script === 'string' ? `${stem}.sql` : `${stem}-${i + 1}.sql`))
  const duration = options.duration ?? DURATION_SECONDS
  const warmup = options.warmup ?? 0
  try {
    for (const [i, file] of files.entries()) writeFileSync(file, scripts[i]!)
    const url = new URL(databaseUrl)
    const args = ['pgbench', '-n', '-M', 'prepared', '-h', url.hostname, '-p', url.port || '5432', '-U', url.username || 'postgres', '-c', String(options.clients ?? CONNECTIONS), '-j', String(options.threads ?? 2), '-T', String(warmup + duration)]
    if (warmup) args.push('-P', '1')
    for (const file of files) args.push('-f', typeof script === 'string' ? file : `${file}@1`)
    for (const [name, value] of Object.entries(options.variables ?? {})) args.push('-D', `${name}=${value}`)
    args.push(url.pathname.slice(1))
    const child = Bun.spawn(args, { stdout: 'pipe', stderr: 'pipe' })
    const [output, errors] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()])
    if ((await child.exited) !== 0) throw new Error(`pgbench failed: ${errors}`)
    if (warmup) {
      // `progress: 12.0 s, 2958.3 tps, …` on stderr, one a second: the mean of the measured seconds'.
      const measured = [...errors.matchAll(/^progress: ([\d.]+) s, ([\d.]+) tps/gm)].filter((line) => Number(line[1]) > warmup).map((line) => Number(line[2]))
      if (measured.length < duration / 2) throw new Error(`pgbench printed ${measured.length} progress lines after its ${warmup} s warm-up: ${errors}`)
      return measured.reduce((sum, tps) => sum + tps, 0) / measured.length
    }
    // With several scripts the overall line comes first, then each script's own `tps = …`.
    const tps = /^tps = ([\d.]+)/m.exec(output)
    if (!tps) throw new Error(`pgbench printed no tps: ${output}`)
    return Number(tps[1])
  } finally {
    for (const file of files) rmSync(file, { force: true })
  }
}

/** The ceiling of a script: the better of 64 clients (the load's connections) and 10 (the service's pool). */
export async function pgbenchCeiling(databaseUrl: string, script: string, variables: Record<string, string>): Promise<{ many: number; pool: number; best: number }> {
  const many = await pgbench(databaseUrl, script, { variables })
  const pool = await pgbench(databaseUrl, script, { variables, clients: 10 })
  return { many, pool, best: Math.max(many, pool) }
}
