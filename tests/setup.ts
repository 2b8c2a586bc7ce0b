/**
 * Preloaded by `bun test` (bunfig.toml): quiet logs unless LOG_LEVEL asks otherwise, and the
 * migrated PGlite template built before any test file starts (the first build takes seconds,
 * longer than a hook may).
 */
import { pgliteTemplate, usingServer } from './helpers/database'

process.env.LOG_LEVEL ??= 'silent'
if (!usingServer()) await pgliteTemplate()
