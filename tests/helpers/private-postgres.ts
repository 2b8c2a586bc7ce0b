/**
 * A throwaway PostgreSQL server for fault tests that stop or restart the server: its own data
 * directory and port, so the shared server other test runs use is never touched. Needs the
 * PostgreSQL 15 binaries and either root (the server runs as `postgres` through runuser) or the
 * postgres user itself; `privatePostgresUnavailable()` says why not, for a stated skip.
 * With `{ citus: true }` the server loads Citus, set up as a node of a private cluster
 * (tests/helpers/private-citus.ts).
 */
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { freePort } from './http'

const BIN = process.env.PG_BIN_DIR ?? '/usr/lib/postgresql/15/bin'

export interface PrivatePostgresOptions {
  /**
   * Loads Citus (`shared_preload_libraries`) with what a node of a cluster that moves shards
   * needs: logical WAL and replication slots (online shard moves), prepared transactions (2PC),
   * room for the coordinator's connections and the rebalancer's background workers, and the
   * node's own address as 127.0.0.1 (the server listens on nothing else).
   */
  citus?: boolean
  /** Further `-c name=value` settings, applied last (values without spaces). */
  settings?: Record<string, string | number>
}

/** The settings a Citus node gets (see PrivatePostgresOptions.citus). */
const CITUS_SETTINGS: Record<string, string | number> = {
  shared_preload_libraries: 'citus',
  wal_level: 'logical',
  max_prepared_transactions: 100,
  max_connections: 200,
  max_worker_processes: 24,
  max_wal_senders: 20,
  max_replication_slots: 20,
  max_logical_replication_workers: 8,
  shared_buffers: '32MB',
  'citus.local_hostname': '127.0.0.1',
}

export interface PrivatePostgres {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string
  port: number
  /** `pg_ctl restart` (fast: open sessions are terminated, as in a real restart). */
  restart(mode?: 'fast' | 'smart' | 'immediate'): Promise<void>
  stop(mode?: 'fast' | 'immediate'): Promise<void>
  start(): Promise<void>
  /** Stops the server (if running) and deletes its directory. */
  destroy(): Promise<void>
}

function postgresAccount(): { uid: number; gid: number } | undefined {
  const line = Bun.spawnSync(['id', '-u', 'postgres']).stdout.toString().trim()
  const group = Bun.spawnSync(['id', '-g', 'postgres']).stdout.toString().trim()
  return line && group ? { uid: Number(line), gid: Number(group) } : undefined
}

/** Why a private server cannot be started here, or undefined when it can. */
export function privatePostgresUnavailable(): string | undefined {
  for (const binary of ['initdb', 'pg_ctl', 'postgres'])
    if (!existsSync(join(BIN, binary))) return `no PostgreSQL binaries in ${BIN} (set PG_BIN_DIR)`
  const user = userInfo().username
  if (user === 'postgres') return undefined
  if (process.getuid?.() !== 0) return `not root and not the postgres user (running as ${user})`
  if (!postgresAccount()) return 'no postgres system user to run the server as'
  if (!existsSync('/usr/sbin/runuser') && !existsSync('/sbin/runuser') && !existsSync('/usr/bin/runuser')) return 'runuser is missing'
  return undefined
}

async function run(command: string[], timeoutMs = 30_000): Promise<void> {
  const asPostgres = userInfo().username === 'postgres' ? command : ['runuser', '-u', 'postgres', '--', ...command]
  const child = Bun.spawn(asPostgres, { stdout: 'pipe', stderr: 'pipe' })
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  clearTimeout(timer)
  if (code !== 0) throw new Error(`${command[0]!.split('/').pop()} ${command[1] ?? ''} failed (exit ${code}): ${(err || out).trim().slice(0, 500)}`)
}

/** Creates, configures and starts a private server on a free port of 127.0.0.1. */
export async function startPrivatePostgres(serverOptions: PrivatePostgresOptions = {}): Promise<PrivatePostgres> {
  const reason = privatePostgresUnavailable()
  if (reason) throw new Error(`cannot start a private PostgreSQL: ${reason}`)
  const dir = mkdtempSync(join(tmpdir(), 'wt-pg-'))
  const account = postgresAccount()
  if (userInfo().username !== 'postgres' && account) chownSync(dir, account.uid, account.gid)
  const data = join(dir, 'data')
  const port = await freePort()
  // fsync off: the data only has to survive clean restarts of a throwaway server, not a crash.
  const settings = { ...(serverOptions.citus ? CITUS_SETTINGS : {}), ...serverOptions.settings }
  const flags = Object.entries(settings).map(([name, value]) => ` -c ${name}=${value}`).join('')
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50${flags}`
  const ctl = (action: string, extra: string[] = []) => run([join(BIN, 'pg_ctl'), action, '-D', data, '-w', '-t', '30', ...extra])
  let running = false
  try {
    await run([join(BIN, 'initdb'), '-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale', 'C'], 60_000)
    await ctl('start', ['-o', options, '-l', join(dir, 'log')])
    running = true
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async restart(mode = 'fast') {
      await ctl('restart', ['-m', mode, '-o', options, '-l', join(dir, 'log')])
      running = true
    },
    async stop(mode = 'fast') {
      await ctl('stop', ['-m', mode])
      running = false
    },
    async start() {
      await ctl('start', ['-o', options, '-l', join(dir, 'log')])
      running = true
    },
    async destroy() {
      try {
        if (running) await ctl('stop', ['-m', 'immediate'])
      } finally {
        running = false
        rmSync(dir, { recursive: true, force: true })
      }
    },
  }
}
