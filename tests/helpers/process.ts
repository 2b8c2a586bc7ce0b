import { readFileSync } from 'node:fs'

/**
 * Whether process `pid` has exited. A process that has exited but is not yet reaped (a zombie,
 * state Z) still answers signal 0; an orphan's reaper is whoever adopts it, which in CI's process
 * tree (a subreaper that does not wait for adopted children) may reap late or never.
 */
export function exited(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return true
  }
  try {
    // The state is the field after the command name, which is in parentheses and may hold spaces.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z'
  } catch {
    return false // no /proc (not Linux): signal 0 is all there is
  }
}
