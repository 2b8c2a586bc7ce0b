/** Every plugin the service knows, in a stable order; which of them run is configuration. */
import type { AnyPlugin } from '../src/plugin'
import auth from './auth'
import docs from './docs'
import users from './users'

export const registry: readonly AnyPlugin[] = [auth, users, docs]
