/** pgbench runs of a service's own statements: the ceiling a benchmark's endpoint is compared with. */
import { rmSync, writeFileSync } from 'node:fs'
import { CONNECTIONS, DURATION_SECONDS } from './settings'

/** A statement compiled with named placeholders: its text (`$1`…) and the name each `$n` takes, in order. */
export interface NamedStatement {
  text: string
  parameters: string[]
}

/** A statement as a pgbench command, its `$n` as pgbench variables of the same names (`:project`…). */
export function asPgbench(statement: NamedStatement): string {
  return `${statement.text.replace(/\$(\d+)/g, (_, n) => `:${statement.parameters[Number(n) - 1]}`)};`
}

/** Runs pgbench (`-M prepared`) with a custom script and returns transactions per second. */
export async function pgbench(databaseUrl: string, script: string, options: { clients?: number; threads?: number; duration?: number; variables?: Record<string, string> } = {}): Promise<number> {
  const file = `/tmp/worktrack-pgbench-${process.pid}-${Math.random().toString(36).slice(2, 8)}.sql`
  writeFileSync(file, script)
  try {
    const url = new URL(databaseUrl)
    const args = ['pgbench', '-n', '-M', 'prepared', '-h', url.hostname, '-p', url.port || '5432', '-U', url.username || 'postgres', '-c', String(options.clients ?? CONNECTIONS), '-j', String(options.threads ?? 2), '-T', String(options.duration ?? DURATION_SECONDS), '-f', file]
    for (const [name, value] of Object.entries(options.variables ?? {})) args.push('-D', `${name}=${value}`)
    args.push(url.pathname.slice(1))
    const child = Bun.spawn(args, { stdout: 'pipe', stderr: 'pipe' })
    const [output, errors] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()])
    if ((await child.exited) !== 0) throw new Error(`pgbench failed: ${errors}`)
    const tps = /tps = ([\d.]+)/.exec(output)
    if (!tps) throw new Error(`pgbench printed no tps: ${output}`)
    return Number(tps[1])
  } finally {
    rmSync(file, { force: true })
  }
}

/** The ceiling of a script: the better of 64 clients (the load's connections) and 10 (the service's pool). */
export async function pgbenchCeiling(databaseUrl: string, script: string, variables: Record<string, string>): Promise<{ many: number; pool: number; best: number }> {
  const many = await pgbench(databaseUrl, script, { variables })
  const pool = await pgbench(databaseUrl, script, { variables, clients: 10 })
  return { many, pool, best: Math.max(many, pool) }
}
