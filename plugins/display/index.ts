/**
 * The `display` plugin: display accounts with an exact daily limit, dashboard pages and
 * components (managed through API v1), `POST /api/component`, and live dashboard pages.
 */
import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import { createDisplayKit } from '../../src/http/display-api'
import { forbidden } from '../../src/http/errors'
import { describeError } from '../../src/log'
import { definePlugin } from '../../src/plugin'
import { SessionsRef, UserDirectoryRef, UserLifecycleRef } from '../auth/api'
import { TeamDirectoryRef, TeamEventsRef } from '../teams/api'
import { ComponentFeedsRef, DisplayAccountsRef, DisplayCallsRef, DisplayPagesRef, DisplayUpdatesRef, FragmentCacheRef, LivePageExtensionsRef } from './api'
import { createDisplayAccount, createDisplayAccounts, setDailyLimit } from './calls/accounts'
import { createDisplayCalls, displayCallRecorder } from './calls/calls'
import { ChangeNotifier } from './calls/changes'
import { CallGroups } from './calls/groups'
import { componentRoutes } from './calls/routes'
import { LiveExtensions } from './live/extensions'
import { FragmentCache } from './live/fragments'
import { liveRoutes } from './live/routes'
import { LiveStreams, type PageChange } from './live/streams'
import { ShareViewLimits } from './live/view-limits'
import { DISPLAY_CHANNEL } from './pages/channels'
import { dashboardRoutes } from './pages/routes'
import { createPages, findPage } from './pages/service'
import { createComponentFeeds } from './pages/feeds'
import { createShareLinks } from './pages/share-links'
import { components, displayAccounts, displayUsage, pageAccess, pages, pageShareLinks } from './schema'

const DisplayConfig = Type.Object({
  defaultDailyLimit: Type.Integer({ minimum: 0, default: 50_000, description: 'Calls per UTC day of a new display account (the beta limit).' }),
  maxComponentsPerPage: Type.Integer({ minimum: 1, maximum: 10_000, default: 100, description: 'Components a page may hold; one more is 409.' }),
  maxStreamsPerUser: Type.Integer({ minimum: 1, maximum: 1000, default: 20, description: 'Live page streams one user may hold open on one instance; one more is 429.' }),
  maxStreamsPerShareLink: Type.Integer({ minimum: 1, maximum: 10_000, default: 100, description: 'Live page streams one share link may hold open on one instance (screens showing it); one more is 429.' }),
  maxShareLinksPerPage: Type.Integer({ minimum: 1, maximum: 10_000, default: 100, description: 'Share links a page may have; one more is 409.' }),
  maxComponentDataKilobytes: Type.Integer({
    minimum: 1,
    maximum: 1024,
    default: 128,
    description: "A component's data as stored (JSON, numbers written out in full), in KiB; more is 400 naming `data`. Live pages read every component's data to draw it: with the default 100 components, a page's data stays within 12.5 MiB.",
  }),
  sharedViewsPerLinkPerMinute: Type.Integer({
    minimum: 1,
    maximum: 1_000_000,
    default: 300,
    description: "Views of one share link (its page /s/<token> and its events stream) per minute on one instance; one more is 429 with Retry-After.",
  }),
  sharedViewsPerAddressPerMinute: Type.Integer({
    minimum: 1,
    maximum: 1_000_000,
    default: 60,
    description: 'Share link views (pages and event streams, any link) per client address per minute on one instance; one more is 429 with Retry-After. The address honours server.trustProxy.',
  }),
  fragmentCacheMegabytes: Type.Integer({ minimum: 1, maximum: 4096, default: 32, description: "Memory for the live pages' rendered SVG, per instance (least recently used out first)." }),
  groupCalls: Type.Boolean({ default: true, description: 'Display calls arriving while statements run go together as one statement and one commit (exact per call; see docs/performance.md).' }),
  maxCallsPerGroup: Type.Integer({ minimum: 2, maximum: 10_000, default: 256, description: 'Most display calls in one grouped statement.' }),
  callStatements: Type.Integer({ minimum: 1, maximum: 64, default: 2, description: 'Display call statements in flight at once per instance; calls beyond them wait and group.' }),
})

export default definePlugin({
  name: 'display',
  description: 'Dashboard pages and components, POST /api/component with an exact daily limit, live pages, their index and share links.',
  links: [{ href: '/pages', title: 'Dashboards', description: 'the live dashboard pages you can see' }],
  dependencies: ['auth', 'teams'],
  config: DisplayConfig,
  tables: { displayAccounts, displayUsage, pages, pageAccess, components, pageShareLinks },
  readModels: {
    page_viewers: 'Who sees a page, one row per page and user: creator, access list users, members of teams on it (push addresses messages with it).',
    component_values: "Each component's number (a box's value, a line chart's last point, a bar or pie chart's total) and when its data was last stamped (alerts evaluate rules on it).",
  },
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
    const users = services.get(UserDirectoryRef)
    const sessions = services.get(SessionsRef)
    services.get(UserLifecycleRef).onUserCreated(async (tx, user) => ({ displayApiKey: await createDisplayAccount(tx, user, config.defaultDailyLimit) }))
    services.provide(DisplayAccountsRef, createDisplayAccounts(context.writes, config.defaultDailyLimit, users))
    const groups = new CallGroups(db, { enabled: config.groupCalls, maxCalls: config.maxCallsPerGroup, concurrency: config.callStatements })
    const recordCall = displayCallRecorder(
      context.metrics.counter({
        name: 'worktrack_display_calls_total',
        help: 'Display API calls by call (component: POST /api/component, message: POST /api/message) and outcome: ok, the refusal\'s message (limitExceeded, staleUpdate…), or failed.',
        labelNames: ['call', 'outcome'],
      }),
    )
    services.provide(DisplayCallsRef, createDisplayCalls(db, groups, recordCall))
    const pages = createPages({ db, writes: context.writes, users, teams: services.get(TeamDirectoryRef), maxComponentsPerPage: config.maxComponentsPerPage })
    services.provide(DisplayPagesRef, {
      async requireVisible(actor, pageId) {
        const { id, name } = await pages.get(actor, pageId)
        return { id, name }
      },
      async requireEditable(actor, pageId) {
        const { page, editor } = await findPage(db, actor, pageId)
        if (!editor) throw forbidden('Only the editors of this page may do this.')
        return { id: page.id, name: page.name }
      },
    })
    const fragments = new FragmentCache(config.fragmentCacheMegabytes * 1024 * 1024, context.metrics)
    services.provide(FragmentCacheRef, fragments)
    const extensions = new LiveExtensions(log)
    services.provide(LivePageExtensionsRef, extensions)
    const streams = new LiveStreams(db, log, fragments, extensions, sessions, { maxStreamsPerUser: config.maxStreamsPerUser, maxStreamsPerLink: config.maxStreamsPerShareLink })
    const shareLinks = createShareLinks({ db, writes: context.writes, maxLinksPerPage: config.maxShareLinksPerPage })
    if (context.background) await streams.watch(events, services.get(TeamEventsRef))
    const notifier = new ChangeNotifier(db, (error) => log.warn('could not notify live viewers', describeError(error)))
    services.provide(DisplayUpdatesRef, { onComponentsChanged: (listener) => notifier.listen(listener) })
    services.provide(ComponentFeedsRef, createComponentFeeds(db, notifier))
    await events.subscribe(DISPLAY_CHANNEL, (changes: PageChange[]) => {
      for (const change of changes) void streams.publish(change)
    })
    context.onStop(async () => {
      await notifier.stop()
      streams.closeAll()
    })
    const shareViews = new ShareViewLimits({ perLinkPerMinute: config.sharedViewsPerLinkPerMinute, perAddressPerMinute: config.sharedViewsPerAddressPerMinute })
    return { pages, shareLinks, sessions, streams, fragments, notifier, groups, recordCall, shareViews, maxComponentDataBytes: config.maxComponentDataKilobytes * 1024, extensions }
  },

  routes: ({ db, http, log, clientAddress }, bound) => {
    // One display API kit for the plugin's display API routes: its session macro, error answers and route builder.
    const kit = createDisplayKit({ sessions: bound.sessions, log, seed: 'display' })
    return new Elysia({ name: 'display' })
      .use(dashboardRoutes(http.v1, bound.pages, bound.shareLinks))
      .use(componentRoutes({ kit, ...bound }))
      .use(liveRoutes({ db, kit, clientAddress, ...bound }))
  },

  cli: {
    'display-limit set': {
      description: "Set a user's display account daily limit.",
      flags: {
        user: { required: true, description: 'User id' },
        limit: { required: true, description: 'Calls per UTC day, a whole number from 0 to 1000000000' },
      },
      run: (context, flags) => setDailyLimit(context.db, flags.user!, Number(flags.limit)),
    },
  },
})
