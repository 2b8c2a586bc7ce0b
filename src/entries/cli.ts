/** Operator CLI entry: `npm run --silent cli -- <command> [--flags]`. */
import { runCli } from '../cli'

process.exit(await runCli(process.argv.slice(2)))
