/**
 * Signed-in test users: a mobile session through the account JSON API (what an app does), or a
 * web session started by the sessions service itself (the cookie a browser would hold after the
 * sign-in form, without going through the form: tests of the form post it themselves).
 */
import { expect } from 'bun:test'
import { SessionsRef, type StartedSession } from '../../plugins/auth/api'
import type { PrincipalUser } from '../../src/services/identity'
import type { TestService, TestUser } from './service'

/** Signs `user` in with `POST /account/api/sessions` (expects 201); the mobile session's token. */
export async function signIn(api: TestService, user: Pick<TestUser, 'email' | 'password'>): Promise<string> {
  const response = await api.request('POST', '/account/api/sessions', { body: { email: user.email, password: user.password } })
  expect(response.status).toBe(201)
  return response.body.data.token
}

export interface WebSession extends StartedSession {
  /** `wt_session=<token>`, for a Cookie header. */
  cookie: string
}

/**
 * A web session of `user`, started by `api`'s sessions service. The principal is the user's, with
 * `displayName` (default: the username) and any field of `principal` over it.
 */
export async function webSession(api: TestService, user: Pick<TestUser, 'id' | 'organizationId' | 'email' | 'username' | 'role'>, principal: Partial<PrincipalUser> = {}): Promise<WebSession> {
  const session = await api.service.core.services
    .get(SessionsRef)
    .start({ id: user.id, organizationId: user.organizationId, email: user.email, username: user.username, displayName: user.username, avatarUrl: null, role: user.role, ...principal }, 'web', null)
  return { ...session, cookie: `wt_session=${session.token}` }
}

/**
 * Signs `user` in through the sign-in form, as a browser does (the form's page for its CSRF token
 * and cookie, then the post, from `ip` when given; expects the 303); the web session it set.
 */
export async function signInForm(api: TestService, user: Pick<TestUser, 'email' | 'password'>, options: { ip?: string } = {}): Promise<{ token: string; cookie: string }> {
  const form = await api.service.fetch(new Request('http://localhost/account/sign-in'))
  const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())![1]!
  const signedIn = await api.service.fetch(
    new Request('http://localhost/account/sign-in', {
      method: 'POST',
      headers: { cookie: form.headers.getSetCookie().map((line) => line.split(';')[0]).join('; '), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf, email: user.email, password: user.password }),
    }),
    options.ip ? { ip: options.ip } : undefined,
  )
  expect(signedIn.status).toBe(303)
  const cookie = signedIn.headers.getSetCookie().find((line) => line.startsWith('wt_session='))!.split(';')[0]!
  return { token: cookie.slice('wt_session='.length), cookie }
}
