/**
 * People over the API: the list (member vs administrator, `q` prefixes, status, cursors),
 * invitations (create, accept through the link's form, reuse, re-issue, expiry), role and status
 * changes (the rules, the last superadministrator also under concurrent requests, deactivation
 * stopping keys at once), `me`, the MCP tools, other organizations (404), and the audit records.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { sqlOn, timeLimit } from '../helpers/database'
import { startTestService, type TestService, type TestUser } from '../helpers/service'

let api: TestService
const sql = sqlOn(() => api)
let root: TestUser
let admin: TestUser
let member: TestUser
let outsider: TestUser
const keys: Record<'root' | 'admin' | 'member' | 'outsider', string> = { root: '', admin: '', member: '', outsider: '' }

beforeAll(async () => {
  api = await startTestService()
  const organization = await api.createOrganization('People A')
  root = await api.createUser(organization, 'superadministrator', { username: 'root' })
  admin = await api.createUser(organization, 'administrator', { username: 'admin' })
  member = await api.createUser(organization, 'member', { username: 'member' })
  outsider = await api.createUser(await api.createOrganization('People B'), 'administrator', { username: 'outsider' })
  const scopes = api.service.core.scopes.map((scope) => scope.name)
  for (const [name, user] of [['root', root], ['admin', admin], ['member', member], ['outsider', outsider]] as const) keys[name] = (await api.createKey(user.id, scopes)).secret
}, timeLimit(60_000))
afterAll(() => api.stop())

type Who = keyof typeof keys
const as = (who: Who | string, method: string, path: string, body?: unknown) => api.request(method, path, { key: who in keys ? keys[who as Who] : who, body })
const auditOf = (requestId: string) => sql<{ action: string; resource_id: string; changes: any; via: string }>('select action, resource_id, changes, via from audit_logs where request_id = $1 order by occurred_at, id', [requestId])
const usernames = (response: { body: { data: Array<{ username: string }> } }) => response.body.data.map((person) => person.username)

/** A cookie-keeping client of the account pages (the invitee's browser). */
function browser() {
  const cookies = new Map<string, string>()
  return {
    cookies,
    async request(method: string, path: string, form?: Record<string, string>) {
      const headers: Record<string, string> = { cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; ') }
      const body = form ? new URLSearchParams(form).toString() : undefined
      if (form) headers['content-type'] = 'application/x-www-form-urlencoded'
      const response = await api.service.fetch(new Request(`http://localhost${path}`, { method, headers, body }))
      for (const line of response.headers.getSetCookie()) {
        const [pair] = line.split(';')
        const [name, ...value] = pair!.split('=')
        if (/Max-Age=0/.test(line)) cookies.delete(name!)
        else cookies.set(name!, value.join('='))
      }
      return { status: response.status, headers: response.headers, text: await response.text() }
    },
  }
}
const csrfOf = (page: string) => /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? ''
const pathOf = (url: string) => new URL(url, 'http://localhost').pathname

async function invite(body: Record<string, unknown>, who: Who = 'admin') {
  const response = await as(who, 'POST', '/api/v1/users', body)
  expect(response.status, response.text).toBe(201)
  return response.body.data as { id: string; username: string; email: string; role: string; status: string; displayName: string; inviteUrl: string; inviteExpiresAt: string }
}

describe('GET /api/v1/users', () => {
  test('a member sees active users with limited identity; an administrator also email, role and status', async () => {
    const leaver = await api.createUser(root.organizationId, 'member', { username: 'leaver' })
    await api.deactivateUser(leaver.id)
    const invited = await invite({ email: 'listed-invitee@example.com' })
    const asMember = await as('member', 'GET', '/api/v1/users?size=100')
    expect(asMember.status).toBe(200)
    for (const person of asMember.body.data) expect(Object.keys(person).sort()).toEqual(['avatarUrl', 'displayName', 'id', 'username'])
    expect(asMember.text).not.toContain(member.email)
    expect(usernames(asMember)).toEqual(expect.arrayContaining(['admin', 'member', 'root']))
    expect(usernames(asMember)).not.toContain('leaver')
    expect(usernames(asMember)).not.toContain(invited.username)
    expect(usernames(asMember)).not.toContain('outsider')

    const asAdmin = await as('admin', 'GET', '/api/v1/users?size=100')
    expect(asAdmin.body.data.find((person: { id: string }) => person.id === member.id)).toEqual({ id: member.id, username: 'member', displayName: expect.any(String), avatarUrl: null, email: member.email, role: 'member', status: 'active' })
    expect(asAdmin.body.data.every((person: { status: string }) => person.status === 'active')).toBe(true)

    expect(usernames(await as('admin', 'GET', '/api/v1/users?status=deactivated'))).toEqual(['leaver'])
    expect(usernames(await as('root', 'GET', '/api/v1/users?status=invited'))).toContain(invited.username)
    expect((await as('member', 'GET', '/api/v1/users?status=active')).status).toBe(200)
    for (const status of ['deactivated', 'invited']) {
      const refused = await as('member', 'GET', `/api/v1/users?status=${status}`)
      expect(refused.status).toBe(403)
      expect(refused.body.errors[0].code).toBe('FORBIDDEN')
    }
    const unknown = await as('admin', 'GET', '/api/v1/users?status=gone')
    expect(unknown.status).toBe(400)
    expect(unknown.body.errors[0].field).toBe('status')
    expect((await as(await api.createKey(member.id, []).then((key) => key.secret), 'GET', '/api/v1/users')).status).toBe(403)
  })

  test('q matches the start of a username or display name (administrators: also an email), case-insensitive; % and _ only themselves', async () => {
    const organization = await api.createOrganization('Prefixes')
    const boss = await api.createUser(organization, 'administrator', { username: 'boss', email: 'boss@prefix.example' })
    const plain = await api.createUser(organization, 'member', { username: 'plain', email: 'zed.plain@prefix.example' })
    const bossKey = (await api.createKey(boss.id, ['users:read'])).secret
    const plainKey = (await api.createKey(plain.id, ['users:read'])).secret
    for (const username of ['ab_c', 'abxc', 'abyd', 'fifty', 'Zoe']) await api.createUser(organization, 'member', { username })
    for (const [username, name] of [['Zoe', 'Quinn Archer'], ['abyd', '50% off'], ['fifty', '50x']])
      await sql(`update users set display_name = $1 where username = $2 and organization_id = $3`, [name, username, organization])
    const list = async (key: string, q: string) => usernames(await as(key, 'GET', `/api/v1/users?q=${encodeURIComponent(q)}&size=100`))
    expect(await list(bossKey, 'ab_')).toEqual(['ab_c'])
    expect(await list(bossKey, '50%')).toEqual(['abyd'])
    expect(await list(bossKey, '50')).toEqual(['abyd', 'fifty'])
    expect(await list(bossKey, 'AB')).toEqual(['ab_c', 'abxc', 'abyd'])
    expect(await list(bossKey, 'quinn')).toEqual(['Zoe'])
    expect(await list(bossKey, 'archer')).toEqual([])
    expect(await list(bossKey, 'c')).toEqual([])
    expect(await list(bossKey, '\\')).toEqual([])
    // An email's start: for an administrator only.
    expect(await list(bossKey, 'ZED.')).toEqual(['plain'])
    expect(await list(plainKey, 'zed.')).toEqual([])
    const long = await as(bossKey, 'GET', `/api/v1/users?q=${'a'.repeat(101)}`)
    expect(long.status).toBe(400)
    expect(long.body.errors[0].field).toBe('q')
    // A NUL, which no PostgreSQL text holds: 400 naming q, never the statement's failure (found by the fuzzer).
    const nul = await as(bossKey, 'GET', '/api/v1/users?q=a%00b')
    expect(nul.status).toBe(400)
    expect(nul.body.errors[0].field).toBe('q')
  })

  test('a cursor walk gives every user once, by username then id; a cursor of another list is 400', async () => {
    const organization = await api.createOrganization('Walk')
    const reader = await api.createUser(organization, 'member', { username: 'm-reader' })
    const key = (await api.createKey(reader.id, ['users:read'])).secret
    for (const username of ['w1', 'w2', 'w3', 'w4', 'w5', 'W6', 'w7']) await api.createUser(organization, 'member', { username })
    const all = await as(key, 'GET', '/api/v1/users?size=100')
    expect(all.body.meta.totalItems).toBe(8)
    let path = '/api/v1/users?size=3'
    const walked: string[] = []
    for (let pages = 0; path && pages < 10; pages++) {
      const page = await as(key, 'GET', path)
      expect(page.status).toBe(200)
      walked.push(...usernames(page))
      const next = page.body.meta.nextCursor
      if (next) expect(page.headers.get('link')).toContain(`cursor=${next}>; rel="next"`)
      path = next ? `/api/v1/users?size=3&cursor=${next}` : ''
    }
    expect(walked).toEqual(usernames(all))
    expect(new Set(walked).size).toBe(8)
    const sorted = (await sql<{ username: string }>('select username from users where organization_id = $1 and status = $2 order by username, id', [organization, 'active'])).map((row) => row.username)
    expect(walked).toEqual(sorted)
    const first = await as(key, 'GET', '/api/v1/users?size=3')
    const elsewhere = await as(key, 'GET', `/api/v1/users?size=3&q=w&cursor=${first.body.meta.nextCursor}`)
    expect(elsewhere.status).toBe(400)
    expect(elsewhere.body.errors[0].field).toBe('cursor')
  })
})

describe('invitations', () => {
  test('invite, open the link, choose a password: active, signed in, and able to make a key; the link works once', async () => {
    const response = await as('admin', 'POST', '/api/v1/users', { email: 'New.Person+tag@Example.com', displayName: 'New Person' })
    expect(response.status).toBe(201)
    const { inviteUrl, inviteExpiresAt: expiresAt, ...user } = response.body.data
    expect(user).toEqual({ id: expect.any(String), username: 'new.persontag', displayName: 'New Person', avatarUrl: null, email: 'new.person+tag@example.com', role: 'member', status: 'invited' })
    expect(response.headers.get('location')).toBe(`/api/v1/users/${user.id}`)
    expect(inviteUrl).toMatch(/^http:\/\/localhost\/account\/invite\/wti_[0-9A-Za-z]{42}$/)
    expect(new Date(expiresAt).getTime() - Date.now()).toBeGreaterThan(6.9 * 86_400_000)
    const token = inviteUrl.split('/').at(-1)!
    const [stored] = await sql<{ token_hash: string; created_by: string }>('select token_hash, created_by from user_invitations where user_id = $1', [user.id])
    expect(stored).toEqual({ token_hash: createHash('sha256').update(token).digest('hex'), created_by: admin.id })
    expect(JSON.stringify(await sql('select * from audit_logs where resource_id = $1', [user.id]))).not.toContain(token)
    // The created-user hooks ran: the display plugin's account exists.
    expect(await sql('select 1 from display_accounts where user_id = $1', [user.id])).toHaveLength(1)
    expect((await auditOf(response.headers.get('x-request-id')!)).map((row) => row.action)).toEqual(['user.invited', 'user.invitation_issued'])

    // Invited: cannot sign in, is not resolvable nor assignable.
    const signIn = await api.request('POST', '/account/api/sessions', { body: { email: user.email, password: 'whatever password' } })
    expect(signIn.status).toBe(401)
    expect((await as('member', 'GET', `/api/v1/users/${user.id}`)).status).toBe(404)
    // An administrator reads what the answer's Location names.
    expect((await as('admin', 'GET', response.headers.get('location')!)).body.data).toEqual(user)
    const team = await as('admin', 'POST', '/api/v1/teams', { name: 'Invitees' })
    const assigned = await as('admin', 'POST', `/api/v1/teams/${team.body.data.id}/members`, { userId: user.id })
    expect(assigned.status).toBe(400)

    const invitee = browser()
    const page = await invitee.request('GET', pathOf(inviteUrl))
    expect(page.status).toBe(200)
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'")
    expect(page.text).toContain('People A')
    expect(page.text).toContain('new.person+tag@example.com')
    expect(page.text).not.toContain('<script>')
    // The form's CSRF token must match its cookie.
    const forged = await browser().request('POST', pathOf(inviteUrl), { csrf: csrfOf(page.text), password: 'chosen password', confirm: 'chosen password' })
    expect(forged.status).toBe(403)
    const differ = await invitee.request('POST', pathOf(inviteUrl), { csrf: csrfOf(page.text), password: 'chosen password', confirm: 'other password' })
    expect(differ.status).toBe(400)
    const short = await invitee.request('POST', pathOf(inviteUrl), { csrf: csrfOf(differ.text), password: 'short', confirm: 'short' })
    expect(short.status).toBe(400)
    expect((await sql('select status from users where id = $1', [user.id]))[0].status).toBe('invited')
    const accepted = await invitee.request('POST', pathOf(inviteUrl), { csrf: csrfOf(short.text), password: 'chosen password', confirm: 'chosen password' })
    expect(accepted.status).toBe(303)
    expect(accepted.headers.get('location')).toBe('/account')
    expect(invitee.cookies.get('wt_session')).toMatch(/^wts_/)
    expect((await sql('select status from users where id = $1', [user.id]))[0].status).toBe('active')
    expect(await sql('select 1 from user_invitations where user_id = $1', [user.id])).toEqual([])

    // Signed in: the keys page, and a key made there works.
    const keysPage = await invitee.request('GET', '/account/keys')
    expect(keysPage.status).toBe(200)
    const made = await invitee.request('POST', '/account/keys', { csrf: csrfOf(keysPage.text), name: 'first key', scopes: 'users:read' })
    expect(made.status).toBe(201)
    const secret = /id="new-secret">([^<]+)</.exec(made.text)![1]!
    const me = await as(secret, 'GET', '/api/v1/users/me')
    expect(me.body.data.user).toMatchObject({ id: user.id, email: user.email })
    expect(me.body.data.organization).toEqual({ id: root.organizationId, name: 'People A' })
    // And the password signs in.
    expect((await api.request('POST', '/account/api/sessions', { body: { email: user.email, password: 'chosen password' } })).status).toBe(201)

    // The link works once.
    const again = await browser().request('GET', pathOf(inviteUrl))
    expect(again.status).toBe(404)
    expect(again.text).toContain('not valid')
    const reused = await invitee.request('POST', pathOf(inviteUrl), { csrf: invitee.cookies.get('wt_invite') ?? 'x', password: 'another password', confirm: 'another password' })
    expect(reused.status).toBe(404)
  })

  test('a new link voids the old one; only an invited user gets one', async () => {
    const first = await invite({ email: 'relinked@example.com' })
    const second = (await as('admin', 'POST', `/api/v1/users/${first.id}/invite`)).body.data
    expect(second.inviteUrl).not.toBe(first.inviteUrl)
    expect((await browser().request('GET', pathOf(first.inviteUrl))).status).toBe(404)
    expect((await browser().request('GET', pathOf(second.inviteUrl))).status).toBe(200)
    expect(await sql('select 1 from user_invitations where user_id = $1', [first.id])).toHaveLength(1)
    const active = await as('admin', 'POST', `/api/v1/users/${member.id}/invite`)
    expect(active.status).toBe(409)
    expect((await as('member', 'POST', `/api/v1/users/${first.id}/invite`)).status).toBe(403)
  })

  test('an expired, an unknown and a malformed link get the same page (404)', async () => {
    const { inviteUrl, ...user } = await invite({ email: 'expiring@example.com' })
    expect((await browser().request('GET', pathOf(inviteUrl))).status).toBe(200)
    await sql(`update user_invitations set expires_at = now() - interval '1 minute' where user_id = $1 and organization_id = $2`, [user.id, root.organizationId])
    const pages = await Promise.all(
      [pathOf(inviteUrl), '/account/invite/wti_000000000000000000000000000000000000000000', '/account/invite/nonsense', '/account/invite/%ZZ'].map((path) => browser().request('GET', path)),
    )
    for (const page of pages) {
      expect(page.status).toBe(404)
      expect(page.text).toBe(pages[0]!.text)
    }
    const client = browser()
    const form = await client.request('GET', pathOf(inviteUrl))
    const posted = await client.request('POST', pathOf(inviteUrl), { csrf: csrfOf(form.text) || 'none', password: 'chosen password', confirm: 'chosen password' })
    expect(posted.status).not.toBe(303)
    expect((await sql('select status from users where id = $1', [user.id]))[0].status).toBe('invited')
  })

  test('usernames are derived and made unique; a taken email or username is 409 naming the field', async () => {
    const a = await invite({ email: 'sam@one.example' })
    const b = await invite({ email: 'Sam@two.example' })
    const c = await invite({ email: 'sam@three.example' })
    expect([a.username, b.username, c.username]).toEqual(['sam', 'sam2', 'sam3'])
    expect(c.displayName).toBe('sam3')
    // Only letters, digits, `.`, `_` and `-` of the address, starting with a letter or digit.
    expect((await invite({ email: '_weird+name@example.com' })).username).toBe('weirdname')
    const email = await as('admin', 'POST', '/api/v1/users', { email: 'SAM@one.example' })
    expect(email.status).toBe(409)
    expect(email.body.errors[0]).toMatchObject({ field: 'email', existingId: a.id })
    // Another organization's user: taken, but never named.
    const theirs = await as('admin', 'POST', '/api/v1/users', { email: outsider.email })
    expect(theirs.status).toBe(409)
    expect(theirs.body.errors[0].field).toBe('email')
    expect(theirs.body.errors[0].existingId).toBeUndefined()
    const username = await as('admin', 'POST', '/api/v1/users', { email: 'fresh@example.com', username: 'member' })
    expect(username.status).toBe(409)
    expect(username.body.errors[0]).toMatchObject({ field: 'username', existingId: member.id })
    const role = await as('admin', 'POST', '/api/v1/users', { email: 'boss@example.com', role: 'superadministrator' })
    expect(role.status).toBe(400)
  })

  test('members cannot invite; nothing is written', async () => {
    const refused = await as('member', 'POST', '/api/v1/users', { email: 'nope@example.com' })
    expect(refused.status).toBe(403)
    expect(refused.body.errors[0].code).toBe('FORBIDDEN')
    expect(await auditOf(refused.headers.get('x-request-id')!)).toEqual([])
    expect(await sql(`select 1 from user_emails where email = 'nope@example.com'`)).toEqual([])
  })
})

describe('PATCH /api/v1/users/{userId}', () => {
  test('administrators manage members and administrators; only a superadministrator touches superadministrators', async () => {
    const target = await api.createUser(root.organizationId, 'member')
    const promoted = await as('admin', 'PATCH', `/api/v1/users/${target.id}`, { role: 'administrator' })
    expect(promoted.status).toBe(200)
    expect(promoted.body.data).toMatchObject({ id: target.id, role: 'administrator', status: 'active' })
    expect(await auditOf(promoted.headers.get('x-request-id')!)).toEqual([
      { action: 'user.role_changed', resource_id: target.id, changes: { before: { role: 'member' }, after: { role: 'administrator' } }, via: 'rest' },
    ])
    const grant = await as('admin', 'PATCH', `/api/v1/users/${target.id}`, { role: 'superadministrator' })
    expect(grant.status).toBe(403)
    expect(await auditOf(grant.headers.get('x-request-id')!)).toEqual([])
    for (const body of [{ role: 'member' }, { status: 'deactivated' }]) expect((await as('admin', 'PATCH', `/api/v1/users/${root.id}`, body)).status).toBe(403)
    expect((await as('member', 'PATCH', `/api/v1/users/${target.id}`, { role: 'member' })).status).toBe(403)
    const granted = await as('root', 'PATCH', `/api/v1/users/${target.id}`, { role: 'superadministrator' })
    expect(granted.body.data.role).toBe('superadministrator')
    const removed = await as('root', 'PATCH', `/api/v1/users/${target.id}`, { role: 'member' })
    expect(removed.body.data.role).toBe('member')
    for (const body of [{}, { role: 'owner' }, { status: 'invited' }, { role: 'member', extra: 1 }]) expect((await as('admin', 'PATCH', `/api/v1/users/${target.id}`, body)).status).toBe(400)
  })

  test('me: yourself to a lower role takes effect on your key at once', async () => {
    const self = await api.createUser(root.organizationId, 'administrator')
    const key = (await api.createKey(self.id, ['users:read', 'users:write'])).secret
    expect((await as(key, 'GET', '/api/v1/users?status=invited')).status).toBe(200)
    const demoted = await as(key, 'PATCH', '/api/v1/users/me', { role: 'member' })
    expect(demoted.status).toBe(200)
    expect(demoted.body.data).toMatchObject({ id: self.id, role: 'member' })
    expect((await as(key, 'GET', '/api/v1/users?status=invited')).status).toBe(403)
    expect((await as(key, 'GET', '/api/v1/users/me')).body.data.user.role).toBe('member')
  })

  test('the last active superadministrator can be neither demoted nor deactivated', async () => {
    const organization = await api.createOrganization('Lonely')
    const only = await api.createUser(organization, 'superadministrator')
    const key = (await api.createKey(only.id, ['users:write'])).secret
    for (const body of [{ role: 'administrator' }, { status: 'deactivated' }]) {
      const refused = await as(key, 'PATCH', '/api/v1/users/me', body)
      expect(refused.status).toBe(409)
      expect(refused.body.errors[0].code).toBe('CONFLICT')
    }
    const second = await api.createUser(organization, 'member')
    expect((await as(key, 'PATCH', `/api/v1/users/${second.id}`, { role: 'superadministrator' })).status).toBe(200)
    expect((await as(key, 'PATCH', '/api/v1/users/me', { role: 'administrator' })).status).toBe(200)
  })

  test('two concurrent demotions of the last two superadministrators: one passes, one is 409', async () => {
    for (const change of [{ role: 'member' }, { status: 'deactivated' }]) {
      const organization = await api.createOrganization()
      const [first, second] = [await api.createUser(organization, 'superadministrator'), await api.createUser(organization, 'superadministrator')]
      const firstKey = (await api.createKey(first.id, ['users:write'])).secret
      const secondKey = (await api.createKey(second.id, ['users:write'])).secret
      // Both keys are cached first, so both requests are usually past their key check before either
      // change commits; then the lock decides and the loser is 409. When one change commits before
      // the other request's key is checked (a slow Citus cluster), the loser is refused by the key
      // check instead: 401 once deactivated, 403 once demoted. Never two passes.
      for (const key of [firstKey, secondKey]) expect((await as(key, 'GET', '/api/v1/users/me')).status).toBe(200)
      // Each demotes the other, at once (and, in a second round, each demotes itself).
      const answers = await Promise.all([as(firstKey, 'PATCH', `/api/v1/users/${second.id}`, change), as(secondKey, 'PATCH', `/api/v1/users/${first.id}`, change)])
      const [won, lost] = answers.map((answer) => answer.status).sort()
      expect(won).toBe(200)
      expect([409, change.status ? 401 : 403]).toContain(lost!)
      const left = await sql(`select id from users where organization_id = $1 and role = 'superadministrator' and status = 'active'`, [organization])
      expect(left).toHaveLength(1)
    }
    const organization = await api.createOrganization()
    const pair = [await api.createUser(organization, 'superadministrator'), await api.createUser(organization, 'superadministrator')]
    const pairKeys = await Promise.all(pair.map(async (user) => (await api.createKey(user.id, ['users:write'])).secret))
    // Demoting yourself never loses the key check (an administrator may still manage users): 409.
    const selves = await Promise.all(pairKeys.map((key) => as(key, 'PATCH', '/api/v1/users/me', { role: 'administrator' })))
    expect(selves.map((answer) => answer.status).sort()).toEqual([200, 409])
    expect(await sql(`select id from users where organization_id = $1 and role = 'superadministrator' and status = 'active'`, [organization])).toHaveLength(1)
  })

  test('deactivation stops the user\'s keys and sessions at once; reactivation lets them back', async () => {
    const leaver = await api.createUser(root.organizationId, 'member')
    const key = (await api.createKey(leaver.id, ['users:read'])).secret
    const session = await api.request('POST', '/account/api/sessions', { body: { email: leaver.email, password: leaver.password } })
    const token = session.body.data.token
    expect((await as(key, 'GET', '/api/v1/users/me')).status).toBe(200)
    const deactivated = await as('admin', 'PATCH', `/api/v1/users/${leaver.id}`, { status: 'deactivated' })
    expect(deactivated.body.data.status).toBe('deactivated')
    expect(await auditOf(deactivated.headers.get('x-request-id')!)).toEqual([
      { action: 'user.deactivated', resource_id: leaver.id, changes: { before: { status: 'active' }, after: { status: 'deactivated' } }, via: 'rest' },
    ])
    // At once: the very next request, no wait.
    expect((await as(key, 'GET', '/api/v1/users/me')).status).toBe(401)
    expect((await api.request('GET', '/account/api/keys', { headers: { authorization: `Bearer ${token}` } })).status).toBe(401)
    expect(usernames(await as('admin', 'GET', '/api/v1/users?status=deactivated&size=100'))).toContain(leaver.username)
    const back = await as('admin', 'PATCH', `/api/v1/users/${leaver.id}`, { status: 'active' })
    expect(back.body.data.status).toBe('active')
    expect((await auditOf(back.headers.get('x-request-id')!)).map((row) => [row.action, row.changes])).toEqual([['user.reactivated', { before: { status: 'deactivated' }, after: { status: 'active' } }]])
    expect((await as(key, 'GET', '/api/v1/users/me')).status).toBe(200)
  })

  test('an invited user: not activated by PATCH; withdrawn, the link stops; reactivated, invited again', async () => {
    const { inviteUrl, ...user } = await invite({ email: 'withdrawn@example.com' })
    expect((await as('admin', 'PATCH', `/api/v1/users/${user.id}`, { status: 'active' })).status).toBe(409)
    expect((await as('admin', 'PATCH', `/api/v1/users/${user.id}`, { status: 'deactivated' })).body.data.status).toBe('deactivated')
    expect((await browser().request('GET', pathOf(inviteUrl))).status).toBe(404)
    expect((await as('admin', 'PATCH', `/api/v1/users/${user.id}`, { status: 'active' })).body.data.status).toBe('invited')
    expect((await as('admin', 'POST', `/api/v1/users/${user.id}/invite`)).status).toBe(201)
  })
})

describe('other organizations and unknown users', () => {
  test('another organization\'s user is 404 on every route, as an unknown or malformed id', async () => {
    const invited = await invite({ email: 'hidden-invitee@example.com' })
    for (const id of [member.id, invited.id, '01a20000-0000-7000-8000-000000000000', 'not-a-uuid']) {
      expect((await as('outsider', 'PATCH', `/api/v1/users/${id}`, { role: 'administrator' })).status).toBe(404)
      expect((await as('outsider', 'POST', `/api/v1/users/${id}/invite`)).status).toBe(404)
      expect((await as('outsider', 'GET', `/api/v1/users/${id}`)).status).toBe(404)
    }
    expect((await sql('select role from users where id = $1', [member.id]))[0].role).toBe('member')
    const theirs = await as('outsider', 'GET', '/api/v1/users?size=100&status=invited')
    expect(usernames(theirs)).not.toContain(invited.username)
    expect(usernames(await as('outsider', 'GET', '/api/v1/users?size=100'))).toEqual(['outsider'])
  })
})

describe('me and MCP', () => {
  const mcp = async (who: Who, name: string, args: Record<string, unknown>) => {
    const response = await api.request('POST', '/mcp', { key: keys[who], body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }, headers: { accept: 'application/json, text/event-stream' } })
    return response.body.result as { isError?: boolean; structuredContent: any }
  }

  test('/users/me names the organization; get_current_user answers the same; get_user takes me', async () => {
    const me = await as('member', 'GET', '/api/v1/users/me')
    expect(me.body.data.organization).toEqual({ id: root.organizationId, name: 'People A' })
    expect((await mcp('member', 'get_current_user', {})).structuredContent).toEqual(me.body.data)
    expect((await mcp('member', 'get_user', { userId: 'me' })).structuredContent).toEqual({ id: member.id, username: 'member', displayName: expect.any(String), avatarUrl: null })
    expect((await as('member', 'GET', `/api/v1/users/${member.id}`)).body.data.id).toBe(member.id)
  })

  test('list_users, invite_user and update_user keep the same rules', async () => {
    const listed = await mcp('member', 'list_users', { q: 'adm' })
    expect(listed.structuredContent.items.map((person: { username: string }) => person.username)).toEqual(['admin'])
    expect((await mcp('member', 'list_users', { status: 'invited' })).structuredContent.error.code).toBe('FORBIDDEN')
    const invited = await mcp('admin', 'invite_user', { email: 'mcp-invitee@example.com', role: 'administrator' })
    expect(invited.isError).toBeUndefined()
    expect(invited.structuredContent).toMatchObject({ username: 'mcp-invitee', role: 'administrator', status: 'invited' })
    expect(invited.structuredContent.inviteUrl).toMatch(/^\/account\/invite\/wti_/)
    expect((await browser().request('GET', invited.structuredContent.inviteUrl)).status).toBe(200)
    expect((await mcp('member', 'invite_user', { email: 'mcp-refused@example.com' })).structuredContent.error.code).toBe('FORBIDDEN')
    const target = await api.createUser(root.organizationId, 'member')
    expect((await mcp('admin', 'update_user', { userId: target.id, role: 'superadministrator' })).structuredContent.error.code).toBe('FORBIDDEN')
    expect((await mcp('admin', 'update_user', { userId: target.id, role: 'administrator' })).structuredContent).toMatchObject({ id: target.id, role: 'administrator' })
    expect((await mcp('outsider', 'update_user', { userId: target.id, role: 'member' })).structuredContent.error.code).toBe('NOT_FOUND')
  })
})
