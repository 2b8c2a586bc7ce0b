/** A reason to refuse to start, printed as one line (its own module: the loader, the registry, the config and the logger all throw or print it). */
export class StartupError extends Error {}
