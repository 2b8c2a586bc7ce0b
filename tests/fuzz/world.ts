/**
 * The one world every fuzzed request runs against, built once through the API: the authorization
 * matrix's organization (cast, project, work items, entry, relationship, page, component,
 * message), the display fixture's organization (a page with one component of each type, a
 * mobile session), keys holding every scope, a registered device, a web session, and a webhook
 * with one delivery.
 */
import { buildWorld, createCast, type Cast, type World } from '../authz/table'
import { createDisplayFixture, type DisplayFixture } from '../helpers/display-fixture'
import type { TestService } from '../helpers/service'
import { SessionsRef } from '../../plugins/auth/api'

export interface FuzzWorld {
  world: World
  cast: Cast
  display: DisplayFixture
  /** Bearer secrets by who holds them; `all*` keys hold every scope. */
  keys: { superadministrator: string; owner: string; viewer: string; noScope: string; revoked: string; otherOrganization: string }
  /** The display key of the display fixture's page creator (valid for its page and components). */
  displayKey: string
  /** A mobile session token of the display fixture's reader (on the page's access list). */
  mobileSession: string
  /** A web session cookie value of the superadministrator (for the live pages and account pages). */
  webSession: string
  /** Real ids by path parameter name: mixing them with garbage reaches deep validation. */
  ids: Record<string, string[]>
  /** Page names (current; a fuzzed PATCH may rename a page, so they are re-read when that happens). */
  pageNames: string[]
  /** A device token registered by the mobile session's user. */
  deviceToken: string
}

/**
 * The test service with a plain `request` (the same real HTTP handling, without the response
 * contract check): fixtures are not what this suite examines, the fuzzed answers are.
 */
export function plain(api: TestService): TestService {
  return { ...api, request: (method, path, options = {}) => api.request(method, path, { ...options, unchecked: true }) }
}

/** Builds the world; every step is a real request or a real service call. */
export async function createFuzzWorld(service: TestService): Promise<FuzzWorld> {
  const api = plain(service)
  const allScopes = api.service.core.scopes.map((scope) => scope.name)
  const organizationId = await api.createOrganization()
  const cast = await createCast(api, organizationId)
  const superKey = await api.createKey(cast.superadministrator.id, allScopes, { name: 'fuzz super' })
  const ownerKey = await api.createKey(cast.owner.id, allScopes, { name: 'fuzz owner' })
  const administratorKey = await api.createKey(cast.administrator.id, allScopes, { name: 'fuzz administrator' })
  const viewerKey = await api.createKey(cast.viewer.id, allScopes, { name: 'fuzz viewer' })
  const noScopeKey = await api.createKey(cast.editor.id, [], { name: 'fuzz no scope' })
  const revokedKey = await api.createKey(cast.editor.id, allScopes, { name: 'fuzz revoked' })
  await api.revokeKey(revokedKey.id)
  const world = await buildWorld(api, cast, { owner: ownerKey.secret, administrator: administratorKey.secret })

  const display = await createDisplayFixture(api)
  const otherKey = await api.createKey(display.creator.id, allScopes, { name: 'fuzz other organization' })
  const deviceToken = `fuzz-device-${Math.random().toString(36).slice(2, 10)}`
  const device = await api.request('POST', '/api/devices', { body: { token: deviceToken, platform: 'android' }, headers: { authorization: `Bearer ${display.readerSession}` } })
  if (device.status !== 201) throw new Error(`world: POST /api/devices answered ${device.status} ${device.text}`)
  const sessions = api.service.core.services.get(SessionsRef)
  const superUser = await sessions.verifyCredentials(cast.superadministrator.email, cast.superadministrator.password)
  if (!superUser) throw new Error('world: the superadministrator cannot sign in')
  const webSession = (await sessions.start(superUser, 'web', null)).token
  const worldPage = await api.request('GET', `/api/v1/pages/${world.pageId}`, { key: superKey.secret })
  const shareLink = await api.request('POST', `/api/v1/pages/${display.pageId}/share-links`, { key: display.creatorKey, body: {} })
  if (shareLink.status !== 201) throw new Error(`world: POST …/share-links answered ${shareLink.status} ${shareLink.text}`)
  // A public address literal (no DNS here); the lane runs no delivery workers, so nothing is sent to it.
  const webhook = await api.request('POST', '/api/v1/webhooks', { key: superKey.secret, body: { url: 'http://8.8.8.8/fuzz', events: ['*'] } })
  if (webhook.status !== 201) throw new Error(`world: POST /api/v1/webhooks answered ${webhook.status} ${webhook.text}`)
  const ping = await api.request('POST', `/api/v1/webhooks/${webhook.body.data.id}/test`, { key: superKey.secret })
  if (ping.status !== 201) throw new Error(`world: POST …/test answered ${ping.status} ${ping.text}`)

  return {
    world,
    cast,
    display,
    keys: { superadministrator: superKey.secret, owner: ownerKey.secret, viewer: viewerKey.secret, noScope: noScopeKey.secret, revoked: revokedKey.secret, otherOrganization: otherKey.secret },
    displayKey: display.creator.displayApiKey!,
    mobileSession: display.readerSession,
    webSession,
    deviceToken,
    pageNames: [worldPage.body.data.name, display.pageName],
    ids: {
      userId: [cast.owner.id, cast.viewer.id, cast.superadministrator.id, world.outsiderId, world.projectMemberId, world.teamMemberId, display.reader.id],
      teamId: [world.linkedTeamId, world.otherTeamId],
      projectId: [world.projectId],
      workItemId: [world.workItemId, world.otherWorkItemId],
      entryId: [world.entryId],
      relationshipId: [world.relationshipId],
      pageId: [world.pageId, display.pageId],
      componentId: [world.componentId, ...Object.values(display.components)],
      messageId: [world.messageId],
      principalId: [world.viewerId, world.linkedTeamId, display.reader.id],
      keyId: [noScopeKey.id, revokedKey.id],
      actorId: [cast.owner.id, cast.superadministrator.id],
      assigneeId: [cast.owner.id, cast.editor.id, world.outsiderId],
      sourceWorkItemId: [world.workItemId, world.otherWorkItemId],
      targetWorkItemId: [world.otherWorkItemId, world.workItemId],
      linkId: [shareLink.body.data.id],
      webhookId: [webhook.body.data.id],
      deliveryId: [ping.body.data.id],
      token: [deviceToken, shareLink.body.data.url.slice('/s/'.length)],
    },
  }
}
