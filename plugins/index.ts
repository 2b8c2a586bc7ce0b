/** Every plugin the service knows, in a stable order; which of them run is configuration. */
import type { AnyPlugin } from '../src/plugin'
import auditLog from './audit-log'
import auth from './auth'
import docs from './docs'
import projects from './projects'
import teams from './teams'
import users from './users'

export const registry: readonly AnyPlugin[] = [auth, users, teams, projects, auditLog, docs]
