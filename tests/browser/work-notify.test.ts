/**
 * A work notification in headless Chromium, end to end: an assignment reaches the assignee's
 * browser subscription at a local Web Push service (encrypted, with a Topic of its thread's); that
 * very payload, handed to the push plugin's service worker, shows one notification tagged with
 * the thread (the same push again replaces it: one per thread); reading the thread sends the
 * device a data-only `work.read`, which closes that thread's notification and leaves another
 * thread's shown. Pushes reach the worker through the DevTools protocol: headless Chromium here
 * has no push service to subscribe with.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core'
import { threadIdOf } from '../../plugins/notifications/pushes'
import { WebPushAgentRef } from '../../plugins/push/api'
import { chromiumAvailable, launchChromium } from '../helpers/browser'
import { listen, type Listening } from '../helpers/http'
import { createProjectFixture, type ProjectFixture } from '../helpers/project-fixture'
import { eventually, startTestService, type TestService } from '../helpers/service'
import { webSession } from '../helpers/sessions'
import { startWebPushReceiver, type ReceivedPush, type ReceiverSubscription, type WebPushReceiver } from '../helpers/webpush-receiver'

let api: TestService
let site: Listening
let browser: Browser
let context: BrowserContext
let fx: ProjectFixture
let receiver: WebPushReceiver
/** The viewer's browser device, as registered with the service. */
let device: ReceiverSubscription

/** A work push's decrypted payload, as the service worker gets it. */
interface WorkPayload {
  title?: string
  body?: string
  data: { type: string; threadId: string; workItemId?: string; projectId?: string; messageId: string; sentAt: string }
}

/** A notification the worker shows, as the page sees it. */
interface Shown {
  title: string
  body: string
  tag: string
  timestamp: number
  type: string | undefined
}

/** The first push of `type` about `threadId` to the viewer's device (waits for it). */
async function pushAbout(type: 'work' | 'work.read', threadId: string): Promise<ReceivedPush & { payload: WorkPayload }> {
  const about = (push: ReceivedPush) => {
    const data = (push.payload as WorkPayload).data
    return push.subscriptionId === device.id && data?.type === type && data.threadId === threadId
  }
  const [push] = await receiver.waitFor(1, 20_000, about)
  return push as ReceivedPush & { payload: WorkPayload }
}

/** The notifications the worker shows with `tag` (`timestamp`, when each was shown, is Chromium's, not in TypeScript's DOM types). */
function shownWith(page: Page, tag: string): Promise<Shown[]> {
  return page.evaluate(async (tag) => {
    const registration = await navigator.serviceWorker.getRegistration('/push/')
    const shown = (await registration!.getNotifications({ tag })) as Array<Notification & { timestamp: number }>
    return shown.map((each) => ({ title: each.title, body: each.body, tag: each.tag, timestamp: each.timestamp, type: each.data?.type as string | undefined }))
  }, tag)
}

/**
 * Hands `payload` to the worker as the browser's push service would, until what it shows with
 * `tag` satisfies `done` (the last seen is returned either way, for the test to judge). Delivered
 * again after 3 s without the effect: on a loaded host a delivery through the DevTools protocol
 * sometimes reaches no worker (see notify.test.ts). Every payload here is idempotent on the worker
 * (a thread's push replaces its notification, a read closes it), so a repeat changes nothing judged.
 */
async function deliverUntil(page: Page, cdp: CDPSession, registrationId: string, payload: unknown, tag: string, done: (shown: Shown[]) => boolean): Promise<Shown[]> {
  let shown: Shown[] = []
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
    await cdp.send('ServiceWorker.deliverPushMessage', { origin: site.url, registrationId, data: JSON.stringify(payload) })
    for (const retry = Date.now() + 3_000; Date.now() < retry; ) {
      shown = await shownWith(page, tag)
      if (done(shown)) return shown
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  }
  return shown
}

describe.skipIf(!chromiumAvailable)(`Work notifications in headless Chromium${chromiumAvailable ? '' : ' — skipped: /usr/bin/chromium is not installed (.ci/run installs it)'}`, () => {
  beforeAll(async () => {
    receiver = await startWebPushReceiver()
    api = await startTestService({
      provide: (services) => services.provide(WebPushAgentRef, { ca: receiver.ca }),
      config: { push: { pollIntervalMs: 50, webPush: { allowPrivateTargets: true } }, notifications: { pollIntervalMs: 50 } },
    })
    site = listen(api, 'localhost')
    fx = await createProjectFixture(api)
    // The viewer's browser, registered as the subscription route registers one: their web session, this site's origin.
    device = receiver.subscribe()
    const { cookie } = await webSession(api, fx.users.viewer)
    const registered = await api.request('POST', '/push/subscriptions', {
      body: { endpoint: device.endpoint, expirationTime: null, keys: device.keys },
      headers: { cookie, origin: 'http://localhost' },
    })
    expect(registered.status).toBe(201)
    browser = await launchChromium()
    context = await browser.newContext()
    await context.grantPermissions(['notifications'], { origin: site.url })
  })
  afterAll(async () => {
    await browser?.close()
    site?.stop()
    await api?.stop()
    await receiver?.close()
  })

  test("an assignment is shown on the assignee's browser once per thread, and reading the thread closes it there", async () => {
    const items = `/api/v1/projects/${fx.projectId}/work-items`
    const item = await fx.as('owner', 'POST', items, { title: 'Fix the login page', assigneeId: fx.users.viewer.id }, 201)
    const threadId = threadIdOf(fx.users.viewer.id, item.id)
    // Another thread of the viewer's, shown too: a read closes its own thread's notification only.
    const other = await fx.as('owner', 'POST', items, { title: 'Renew the certificate', assigneeId: fx.users.viewer.id }, 201)
    const otherThreadId = threadIdOf(fx.users.viewer.id, other.id)

    // What the push service got, decrypted: the notification, and the thread in its data.
    const pushed = await pushAbout('work', threadId)
    expect(pushed.payload.title).toBe(`Fixture #${item.number}`)
    expect(pushed.payload.body).toEndWith('assigned you: Fix the login page')
    expect(pushed.payload.data).toMatchObject({ type: 'work', threadId, workItemId: item.id, projectId: fx.projectId })
    expect(typeof pushed.payload.data.messageId).toBe('string')
    // RFC 8030's Topic: at most 32 URL-safe base64 characters, one per thread (the service maps its collapse key to one).
    expect(pushed.headers.topic).toMatch(/^[\w-]{1,32}$/)
    const otherPushed = await pushAbout('work', otherThreadId)
    expect(otherPushed.headers.topic).toMatch(/^[\w-]{1,32}$/)
    expect(otherPushed.headers.topic).not.toBe(pushed.headers.topic)
    // The thread the push names is the one in the viewer's inbox.
    await eventually(async () => {
      const inbox = await fx.as('viewer', 'GET', '/api/v1/notifications', undefined, 200)
      expect(inbox.find((thread: { workItem: { id: string } }) => thread.workItem.id === item.id)?.id).toBe(threadId)
    }, 10_000)

    // The service worker, registered and active on a page of the site.
    const page = await context.newPage()
    await page.goto(`${site.url}/account/sign-in`)
    const scope = await page.evaluate(async () => {
      await navigator.serviceWorker.register('/push/sw.js', { scope: '/push/' })
      // A deadline, not a count of tries: on a loaded host the worker's activation can take seconds.
      for (const deadline = Date.now() + 15_000; Date.now() < deadline; ) {
        const registration = await navigator.serviceWorker.getRegistration('/push/')
        if (registration?.active?.state === 'activated') return registration.scope
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
      return null
    })
    expect(scope).toBe(`${site.url}/push/`)
    const cdp = await context.newCDPSession(page)
    const registrationId = new Promise<string>((resolve) => {
      cdp.on('ServiceWorker.workerRegistrationUpdated', (event: { registrations: Array<{ registrationId: string; scopeURL: string }> }) => {
        const found = event.registrations.find((registration) => registration.scopeURL === `${site.url}/push/`)
        if (found) resolve(found.registrationId)
      })
    })
    await cdp.send('ServiceWorker.enable')
    const worker = await registrationId

    // The payload the push service got, shown: one notification, tagged with its thread; the other thread's beside it.
    const first = await deliverUntil(page, cdp, worker, pushed.payload, threadId, (shown) => shown.length > 0)
    expect(first.map(({ timestamp, ...rest }) => rest)).toEqual([
      { title: `Fixture #${item.number}`, body: pushed.payload.body!, tag: threadId, type: 'work' },
    ])
    const otherShown = await deliverUntil(page, cdp, worker, otherPushed.payload, otherThreadId, (shown) => shown.length > 0)
    expect(otherShown.map((each) => each.title)).toEqual([`Fixture #${other.number}`])

    // Read on another door: the device gets a data-only `work.read` for the thread, on the same Topic.
    const read = await fx.as('viewer', 'PATCH', `/api/v1/notifications/${threadId}`, { read: true }, 200)
    expect(read.id).toBe(threadId)
    const cleared = await pushAbout('work.read', threadId)
    expect(cleared.payload.title).toBeUndefined()
    expect(cleared.payload.body).toBeUndefined()
    expect(cleared.payload.data).toMatchObject({ type: 'work.read', threadId })
    expect(cleared.headers.topic).toBe(pushed.headers.topic!)

    // The same push again replaces the thread's notification (a newer one, still one for the thread).
    // Shown now, after the other thread's: headless Chromium drops a notification about 25 s after
    // showing it, so this one's closing below is the read's only if the other's is still shown then.
    const again = await deliverUntil(page, cdp, worker, pushed.payload, threadId, (shown) => shown.some((each) => each.timestamp > first[0]!.timestamp))
    expect(again).toHaveLength(1)
    expect(again[0]!.timestamp).toBeGreaterThan(first[0]!.timestamp)
    expect(again[0]).toMatchObject({ title: `Fixture #${item.number}`, tag: threadId })

    // The `work.read`, handed to the worker, closes the thread's notification, and only that one.
    const after = await deliverUntil(page, cdp, worker, cleared.payload, threadId, (shown) => shown.length === 0)
    expect(after).toEqual([])
    expect((await shownWith(page, otherThreadId)).map((each) => each.tag)).toEqual([otherThreadId])
    // The other thread was not read: no `work.read` for it.
    expect(receiver.received((push) => (push.payload as WorkPayload).data?.type === 'work.read' && (push.payload as WorkPayload).data.threadId === otherThreadId)).toEqual([])
    await page.close()
  }, 90_000)
})
