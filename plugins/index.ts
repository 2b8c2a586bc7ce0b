/** Every plugin the service knows, in a stable order; which of them run is configuration. */
import type { AnyPlugin } from '../src/plugin'
import account from './account'
import auditLog from './audit-log'
import auth from './auth'
import contentOrder from './content-order'
import display from './display'
import docs from './docs'
import entries from './entries'
import mcp from './mcp'
import projects from './projects'
import push from './push'
import relationships from './relationships'
import search from './search'
import teams from './teams'
import users from './users'
import workItems from './work-items'

export const registry: readonly AnyPlugin[] = [auth, users, teams, projects, workItems, entries, relationships, contentOrder, search, auditLog, mcp, account, display, push, docs]
