/**
 * The `display` plugin: display accounts with an exact daily limit, dashboard pages and
 * components (managed through API v1), `POST /api/component`, and live dashboard pages.
 */
import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import { describeError } from '../../src/log'
import { definePlugin } from '../../src/plugin'
import { SessionsRef, UserLifecycleRef } from '../auth/api'
import { TeamEventsRef } from '../teams/api'
import { DisplayAccountsRef } from './api'
import { serviceRef } from '../../src/services/registry'
import { createDisplayAccount, createDisplayAccounts, setDailyLimit } from './accounts'
import { displayRoutes } from './display-routes'
import { FragmentCacheRef } from './api'
import { FragmentCache } from './fragments'
import { LiveStreams } from './live-streams'
import { components, displayAccounts, displayUsage, pageAccess, pages } from './schema'
import { ChangeNotifier, DISPLAY_CHANNEL } from './update'
import { dashboardRoutes } from './v1-routes'

const DisplayConfig = Type.Object({
  defaultDailyLimit: Type.Integer({ minimum: 0, default: 50_000, description: 'Calls per UTC day of a new display account (the beta limit).' }),
  maxComponentsPerPage: Type.Integer({ minimum: 1, maximum: 10_000, default: 100, description: 'Components a page may hold; one more is 409.' }),
  maxStreamsPerUser: Type.Integer({ minimum: 1, maximum: 1000, default: 20, description: 'Live page streams one user may hold open on one instance; one more is 429.' }),
  fragmentCacheMegabytes: Type.Integer({ minimum: 1, maximum: 4096, default: 32, description: "Memory for the live pages' rendered SVG, per instance (least recently used out first)." }),
})

/** This plugin's own registry slot for its live streams (set up in `setup`, used by the routes). */
const LiveStreamsRef = serviceRef<LiveStreams>('display.live-streams', 'display')
const FragmentsRef = serviceRef<FragmentCache>('display.fragment-cache', 'display')
const NotifierRef = serviceRef<ChangeNotifier>('display.change-notifier', 'display')

export default definePlugin({
  name: 'display',
  description: 'Dashboard pages and components, POST /api/component with an exact daily limit, and live pages.',
  dependencies: ['auth', 'teams'],
  config: DisplayConfig,
  tables: { displayAccounts, displayUsage, pages, pageAccess, components },
  scopes: [
    { name: 'dashboards:read', description: 'Read dashboard pages, their access lists and components.' },
    { name: 'dashboards:write', description: 'Create pages; manage the pages you created (administrators: all).' },
  ],
  tags: [
    { name: 'Dashboards', description: 'Pages, access lists and components. Their creator and administrators manage a page; its access list reads it.' },
    {
      name: 'Display API',
      description:
        'The dashboard clients\' API: POST /api/component and POST /api/message authenticate with the display key (`dpk_…`) in the body, the mobile routes with a session token from POST /account/api/sessions; never an API key. Not the API v1 envelope: success bodies as documented, errors `{"message", "detail", "field"?}`.',
    },
  ],

  async setup(context) {
    const { db, services, config, events, log } = context
    services.get(UserLifecycleRef).onUserCreated(async (tx, user) => ({ displayApiKey: await createDisplayAccount(tx, user, config.defaultDailyLimit) }))
    services.provide(DisplayAccountsRef, createDisplayAccounts(db, config.defaultDailyLimit))
    const fragments = new FragmentCache(config.fragmentCacheMegabytes * 1024 * 1024)
    services.provide(FragmentsRef, fragments)
    services.provide(FragmentCacheRef, fragments)
    const streams = new LiveStreams(db, log, fragments, services.get(SessionsRef), config.maxStreamsPerUser)
    services.provide(LiveStreamsRef, streams)
    if (context.background) await streams.watch(events, services.get(TeamEventsRef))
    const notifier = new ChangeNotifier(db, (error) => log.warn('could not notify live viewers', describeError(error)))
    services.provide(NotifierRef, notifier)
    await events.subscribe(DISPLAY_CHANNEL, (changes: Array<{ pageId: string; componentId: string }>) => {
      for (const change of changes) void streams.publish(change)
    })
    context.onStop(async () => {
      await notifier.stop()
      streams.closeAll()
    })
  },

  routes: ({ db, http, services, log, config }) =>
    new Elysia({ name: 'display' })
      .use(dashboardRoutes(db, http.v1, { maxComponentsPerPage: config.maxComponentsPerPage }))
      .use(displayRoutes(db, services.get(SessionsRef), services.get(LiveStreamsRef), services.get(FragmentsRef), services.get(NotifierRef), log)),

  cli: {
    'display-limit set': {
      description: "Set a user's display account daily limit.",
      flags: {
        user: { required: true, description: 'User id' },
        limit: { required: true, description: 'Calls per UTC day' },
      },
      run: (context, flags) => setDailyLimit(context.db, flags.user!, Number(flags.limit)),
    },
  },
})
