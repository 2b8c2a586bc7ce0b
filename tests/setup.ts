/** Preloaded by `bun test` (bunfig.toml): quiet logs unless LOG_LEVEL asks otherwise. */
process.env.LOG_LEVEL ??= 'silent'
