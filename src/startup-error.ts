/** A reason to refuse to start, printed as one line (its own module: the loader, the registry, the config and the logger all throw or print it). */
export class StartupError extends Error {}

/** Prints a start-up refusal in one line and exits 1; rethrows nothing. */
export function refuse(error: unknown): never {
  const message = error instanceof StartupError ? error.message : `${(error as Error)?.message ?? error}`
  process.stderr.write(`startup refused: ${message.split('\n')[0]}\n`)
  process.exit(1)
}
