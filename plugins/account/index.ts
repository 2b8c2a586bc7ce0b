/** The `account` plugin: the account pages and their JSON twin for mobile apps. */
import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import { definePlugin, type PluginContext } from '../../src/plugin'
import { accountApi } from './api'
import { signInThrottle } from './schema'
import { signIn, type AccountServices, type SignIn } from './service'
import { ApiKeyManagerRef, OAuthServerRef, PeopleRef, SessionsRef, SingleSignOnRef } from '../auth/api'
import { DisplayAccountsRef } from '../display/api'
import { purgeThrottle } from './throttle'
import { describeError } from '../../src/log'
import { accountPages } from './web'

const AccountConfig = Type.Object({
  signInMaxFailures: Type.Integer({ minimum: 1, default: 10, description: 'Failed sign-ins per email and client address within the window before 429.' }),
  signInMaxFailuresPerAccount: Type.Integer({ minimum: 1, default: 100, description: 'Failed sign-ins per email from all addresses (higher: one address cannot lock an account out).' }),
  signInMaxFailuresPerAddress: Type.Integer({ minimum: 1, default: 100, description: 'Failed sign-ins per client address across all emails.' }),
  signInWindowMinutes: Type.Integer({ minimum: 1, default: 15 }),
})

/** `server.publicUrl`, when the core hands it to plugins (the origin of invitation links). */
const publicUrlOf = (context: PluginContext) => context.publicUrl || undefined

export default definePlugin({
  name: 'account',
  description: 'Sign in; create, list and revoke API keys; approve and disconnect OAuth apps; see and rotate the display key; people and invitations (administrators); mobile session tokens.',
  links: [{ href: '/account', title: 'Account', description: 'sign in and manage your API keys and display key' }],
  dependencies: ['auth'],
  config: AccountConfig,
  tables: { signInThrottle },
  placement: {
    sign_in_throttle: {
      kind: 'local',
      reason: 'Failed sign-in counters keyed by hashed email and client address: attack traffic, not tenant data (an address spans organizations), written on every failure; kept on the coordinator.',
    },
  },
  tags: [{ name: 'Account', description: 'JSON twin of the account pages for mobile apps (Bearer session token).' }],

  optionalDependencies: ['display'],

  setup(context) {
    const { db, config, background, onStop, log, services } = context
    if (background) {
      // Counters whose window ended are dead weight: removed hourly (a counter restarts anyway).
      const timer = setInterval(() => void purgeThrottle(db, config.signInWindowMinutes * 60).catch((error) => log.warn('could not purge sign-in counters', describeError(error))), 3_600_000)
      timer.unref?.()
      onStop(() => clearInterval(timer))
    }
    const policy = {
      maxFailures: config.signInMaxFailures,
      maxFailuresPerAccount: config.signInMaxFailuresPerAccount,
      maxFailuresPerAddress: config.signInMaxFailuresPerAddress,
      windowSeconds: config.signInWindowMinutes * 60,
    }
    const sessions = services.get(SessionsRef)
    return {
      sessions,
      keys: services.get(ApiKeyManagerRef),
      /** The display account section, when the display plugin is enabled. */
      display: services.find(DisplayAccountsRef),
      people: services.get(PeopleRef),
      oauth: services.get(OAuthServerRef),
      singleSignOn: services.get(SingleSignOnRef),
      publicUrl: publicUrlOf(context),
      signIn: (attempt: SignIn) => signIn(db, sessions, policy, attempt),
    } satisfies AccountServices
  },

  routes: (context, account) => new Elysia({ name: 'account' }).use(accountPages(context, account)).use(accountApi(context, account)),
})
