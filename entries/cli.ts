/** Operator CLI entry: `npm run --silent cli -- <command> [--flags]`. */
import { registry } from '../plugins'
import { runCli } from '../src/cli'

process.exit(await runCli(registry, process.argv.slice(2)))
