/**
 * "Notify me" on the live dashboard: a script the live page loads (display's LivePageExtensions)
 * adds the button; a click asks the browser for permission, registers the service worker below,
 * subscribes with the VAPID public key and registers the subscription for the signed-in user
 * (`POST /push/subscriptions`, with the page's own session cookie). The service worker shows each
 * push as a notification (a work notification tagged with its thread, so a thread shows once);
 * a `work.read` message closes its thread's; a click on one opens its page. Served from this plugin, same-origin, so
 * the pages' CSP (`script-src 'self'`) allows them.
 */

/** The service worker, at /push/sw.js (its scope, /push/, matters only for fetches, which it does not handle). */
export const SERVICE_WORKER_JS = `'use strict'
self.addEventListener('install', () => self.skipWaiting())
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()))
self.addEventListener('push', (event) => {
  let message
  try {
    message = event.data ? event.data.json() : {}
  } catch (error) {
    message = { body: event.data ? event.data.text() : '' }
  }
  const data = message.data || {}
  // A thread read or done elsewhere: its notification is closed here.
  if (data.type === 'work.read') {
    event.waitUntil(self.registration.getNotifications({ tag: data.threadId }).then((shown) => shown.forEach((each) => each.close())))
    return
  }
  // One notification per thread (its latest), per page message otherwise.
  const work = data.type === 'work'
  event.waitUntil(self.registration.showNotification(message.title || 'Dashboard', { body: message.body || '', data, tag: work ? data.threadId : data.messageId, renotify: work }))
})
self.addEventListener('notificationclick', (event) => {
  event.notification.close()
  const data = event.notification.data || {}
  const name = data.pageName
  event.waitUntil(self.clients.openWindow(data.type === 'work' ? '/account' : name ? '/pages/' + encodeURIComponent(name) : '/pages'))
})
`

/** The live page's script, at /push/notify.js: the button and the subscription. */
export const NOTIFY_JS = `'use strict'
;(() => {
  if (!('serviceWorker' in navigator) || !('PushManager' in window) || !('Notification' in window)) return
  const nav = document.querySelector('header nav')
  if (!nav) return
  const button = document.createElement('button')
  button.type = 'button'
  button.dataset.notify = ''
  button.style.cssText = 'margin-right:.75rem;font:inherit;cursor:pointer'
  const show = (state, detail) => {
    button.dataset.notify = state
    button.textContent = state === 'on' ? 'Notifications on' : state === 'blocked' ? 'Notifications blocked' : 'Notify me'
    button.title = detail || ''
  }
  const active = (registration) =>
    registration.active
      ? Promise.resolve(registration)
      : new Promise((resolve) => {
          const worker = registration.installing || registration.waiting
          worker.addEventListener('statechange', () => worker.state === 'activated' && resolve(registration))
        })
  async function subscribe() {
    button.disabled = true
    try {
      if ((await Notification.requestPermission()) !== 'granted') return show('blocked', 'Allow notifications for this site in the browser to get them.')
      const registration = await active(await navigator.serviceWorker.register('/push/sw.js', { scope: '/push/' }))
      const { publicKey } = await (await fetch('/api/push/vapid-key')).json()
      const subscription = (await registration.pushManager.getSubscription()) || (await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: publicKey }))
      const response = await fetch('/push/subscriptions', { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json' }, body: JSON.stringify(subscription) })
      if (!response.ok) throw new Error((await response.json().catch(() => ({}))).detail || 'the service answered ' + response.status)
      show('on', 'This browser gets the messages and alerts of the pages you can see.')
    } catch (error) {
      show('off', 'Could not turn notifications on: ' + (error && error.message ? error.message : error))
      button.dataset.error = String(error && error.message ? error.message : error)
    } finally {
      button.disabled = false
    }
  }
  button.addEventListener('click', subscribe)
  show('off')
  nav.prepend(button)
  navigator.serviceWorker
    .getRegistration('/push/')
    .then((registration) => registration && registration.pushManager.getSubscription())
    .then((subscription) => subscription && Notification.permission === 'granted' && show('on'))
    .catch(() => {})
})()
`
