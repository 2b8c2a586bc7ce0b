/** The `account` plugin: the account pages and their JSON twin for mobile apps. */
import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import { definePlugin } from '../../src/plugin'
import { accountApi } from './api'
import { signInThrottle } from './schema'
import { accountPages } from './web'

const AccountConfig = Type.Object({
  signInMaxFailures: Type.Integer({ minimum: 1, default: 10, description: 'Failed sign-ins per account, and per address, before 429.' }),
  signInWindowMinutes: Type.Integer({ minimum: 1, default: 15 }),
})

export default definePlugin({
  name: 'account',
  description: 'Sign in; create, list and revoke API keys; see and rotate the display key; mobile session tokens.',
  dependencies: ['auth'],
  config: AccountConfig,
  tables: { signInThrottle },
  tags: [{ name: 'Account', description: 'JSON twin of the account pages for mobile apps (Bearer session token).' }],

  routes: (context) => {
    const policy = { maxFailures: context.config.signInMaxFailures, windowSeconds: context.config.signInWindowMinutes * 60 }
    return new Elysia({ name: 'account' }).use(accountPages(context, policy)).use(accountApi(context, policy))
  },
})
