/**
 * Preloaded by `bun test` (bunfig.toml): quiet logs unless LOG_LEVEL asks otherwise, no FCM
 * credentials from the environment, and the
 * migrated PGlite template built before any test file starts (the first build takes seconds,
 * longer than a hook may).
 */
import { pgliteTemplate, usingServer } from './helpers/database'

process.env.LOG_LEVEL ??= 'silent'
// No test may reach Google: FCM is the local fake of tests/helpers/fake-fcm.ts, opted into per test.
delete process.env.GOOGLE_APPLICATION_CREDENTIALS
if (!usingServer()) await pgliteTemplate()
