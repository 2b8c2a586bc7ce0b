/**
 * The People page (`/account/people`, administrators only: 404 for anyone else) — the list with a
 * status filter and a search, inviting (the link shown once), role changes, deactivation and
 * reactivation, new links — and the invitation link's page (`/account/invite/<token>`), where the
 * invitee chooses a password and is signed in. Every form is CSRF-protected: the People page's by
 * the session's token, the invitation's by a double-submit cookie (the invitee has no session yet).
 */
import { Elysia } from 'elysia'
import { valueOf } from '../../src/http/answer'
import { ApiError } from '../../src/http/errors'
import { htmlResponse } from '../../src/http/html'
import { requestIdOf } from '../../src/http/request-id'
import type { PluginContext } from '../../src/plugin'
import { actorOf, isAdministrator, type Actor } from '../../src/services/identity'
import { linkOrigin, type Invitation } from '../auth/api'
import { messagePage } from './pages'
import { invitePage, inviteInvalidPage, listQuery, PEOPLE_STATUSES, peoplePage, type PeopleStatus, type PersonRow } from './people-pages'
import type { AccountServices } from './service'
import { field, redirect, type PageContext, type WebSession } from './web-kit'
import { cookie, INVITE_COOKIE, newFormToken, readCookie, SESSION_COOKIE, sameToken } from './web-security'

/** People per page of the People page. */
const PAGE_SIZE = 50

const notFoundPage = () => htmlResponse(messagePage('Not found', 'There is no such page here.'), 404)

/** A status of the list from a query or form value (anything else: active). */
const statusOf = (value: unknown): PeopleStatus => (PEOPLE_STATUSES.includes(value as PeopleStatus) ? (value as PeopleStatus) : 'active')
const text = (value: unknown) => (typeof value === 'string' ? value : Array.isArray(value) && typeof value[0] === 'string' ? value[0] : '')

interface Kit {
  frame(current: WebSession): { title: string; user: WebSession['principal']['user']; csrf: string; showDisplay: boolean }
  signedIn(handler: (current: WebSession, context: PageContext) => Promise<Response>, form?: boolean): (context: PageContext) => Promise<Response>
}

export function peoplePages(context: PluginContext, account: AccountServices, kit: Kit) {
  const { people } = account
  const origin = (request: Request) => linkOrigin(request, context.isSecureRequest(request), account.publicUrl)

  /** An administrator's page: anyone else gets the 404 any unknown page gets. */
  const administrators = (handler: (current: WebSession, actor: Actor, context: PageContext) => Promise<Response>, form = false) =>
    kit.signedIn(async (current, pageContext) => {
      if (!isAdministrator(current.principal.user)) return notFoundPage()
      return handler(current, actorOf(current.principal, 'account', requestIdOf(pageContext.set)), pageContext)
    }, form)

  async function render(current: WebSession, actor: Actor, list: { status: PeopleStatus; q: string; cursor?: string }, extra: { invited?: Invitation; error?: string } = {}, status = 200) {
    let page
    let q = list.q
    try {
      page = await people.list(actor, { status: list.status, q }, { page: 0, size: PAGE_SIZE, ...(list.cursor ? { cursor: list.cursor } : {}) })
    } catch (error) {
      // A search too long, or a cursor not of this list: the first page, saying why.
      if (!(error instanceof ApiError) || error.status !== 400) throw error
      q = ''
      extra = { ...extra, error: extra.error ?? `${error.field ? `${error.field}: ` : ''}${error.message}` }
      page = await people.list(actor, { status: list.status }, { page: 0, size: PAGE_SIZE })
    }
    const next = page.meta.nextCursor ? `/account/people?${listQuery(list.status, q)}&cursor=${encodeURIComponent(page.meta.nextCursor)}` : undefined
    return htmlResponse(
      peoplePage({ frame: kit.frame(current), people: page.items as unknown as PersonRow[], status: list.status, q, total: page.meta.totalItems, next, ...extra }),
      status,
    )
  }

  /** Where a form's answer returns: the list it was sent from. */
  const listOf = (body: unknown) => ({ status: statusOf(field(body, 'list')), q: field(body, 'q') ?? '' })

  /** A refusal of the service as the page (400, 403, 409: the reason shown), or 404's page. */
  const refusal = (current: WebSession, actor: Actor, body: unknown, error: unknown) => {
    if (!(error instanceof ApiError)) throw error
    if (error.status === 404) return notFoundPage()
    if ([400, 403, 409, 503].includes(error.status)) return render(current, actor, listOf(body), { error: `${error.field && error.status === 400 ? `${error.field}: ` : ''}${error.message}` }, error.status)
    throw error
  }

  return new Elysia({ name: 'account-people' })
    .get(
      '/account/people',
      administrators(async (current, actor, { query }) => render(current, actor, { status: statusOf(query.status), q: text(query.q), cursor: text(query.cursor) || undefined })),
      { detail: { hide: true } },
    )
    .post(
      '/account/people',
      administrators(async (current, actor, { request, body }) => {
        const role = field(body, 'role')
        const input = {
          email: field(body, 'email') ?? '',
          ...(field(body, 'username') ? { username: field(body, 'username') } : {}),
          ...(field(body, 'displayName') ? { displayName: field(body, 'displayName') } : {}),
          ...(role ? { role } : {}),
        }
        try {
          const invited = valueOf(await people.invite(actor, input, origin(request)))
          return render(current, actor, { status: 'invited', q: '' }, { invited }, 201)
        } catch (error) {
          return refusal(current, actor, body, error)
        }
      }, true),
      { detail: { hide: true } },
    )
    .post(
      '/account/people/:userId',
      administrators(async (current, actor, { params, body }) => {
        const role = field(body, 'role')
        const status = field(body, 'status')
        const patch = { ...(role ? { role } : {}), ...(status ? { status } : {}) }
        try {
          await people.update(actor, params.userId ?? '', patch)
        } catch (error) {
          return refusal(current, actor, body, error)
        }
        const list = listOf(body)
        return redirect(`/account/people?${listQuery(list.status, list.q)}`)
      }, true),
      { detail: { hide: true } },
    )
    .post(
      '/account/people/:userId/invite',
      administrators(async (current, actor, { request, params, body }) => {
        try {
          const invited = valueOf(await people.reissue(actor, params.userId ?? '', origin(request)))
          return render(current, actor, listOf(body), { invited }, 201)
        } catch (error) {
          return refusal(current, actor, body, error)
        }
      }, true),
      { detail: { hide: true } },
    )
}

/** The link's page carries no referrer (its token is in the address). */
const INVITE_HEADERS = { 'referrer-policy': 'no-referrer' }

export function invitePages(context: PluginContext, account: AccountServices) {
  const { people, sessions } = account
  const invalid = () => htmlResponse(inviteInvalidPage(), 404, INVITE_HEADERS)

  /** The form again (a fresh double-submit token), with `error`. */
  const form = async (request: Request, token: string, status = 200, error?: string) => {
    const pending = await people.invitation(token)
    if (!pending) return invalid()
    const formToken = newFormToken()
    return htmlResponse(invitePage(pending, token, formToken, error), status, {
      ...INVITE_HEADERS,
      'set-cookie': cookie(INVITE_COOKIE, formToken, { secure: context.isSecureRequest(request), maxAge: 3600 }),
    })
  }

  return new Elysia({ name: 'account-invite' })
    .get('/account/invite/:token', ({ request, params }) => form(request, params.token ?? ''), { detail: { hide: true } })
    .post(
      '/account/invite/:token',
      async ({ request, params, body, set }) => {
        const token = params.token ?? ''
        if (!sameToken(field(body, 'csrf'), readCookie(request, INVITE_COOKIE))) return form(request, token, 403, 'The form expired; please choose your password again.')
        const password = field(body, 'password') ?? ''
        if (password !== (field(body, 'confirm') ?? '')) return form(request, token, 400, 'The two passwords differ; type the same password twice.')
        let user
        try {
          user = await people.accept(token, password, requestIdOf(set))
        } catch (error) {
          // Too short or too long (400), or every hashing slot busy (503): the form again, saying so.
          if (error instanceof ApiError && (error.status === 400 || error.status === 503)) return form(request, token, error.status, error.message)
          throw error
        }
        if (!user) return invalid()
        const started = await sessions.start(user, 'web', requestIdOf(set))
        const secure = context.isSecureRequest(request)
        const response = redirect('/account', INVITE_HEADERS)
        response.headers.append('set-cookie', cookie(SESSION_COOKIE, started.token, { secure, maxAge: (started.expiresAt.getTime() - Date.now()) / 1000 }))
        response.headers.append('set-cookie', cookie(INVITE_COOKIE, '', { secure, maxAge: 0 }))
        return response
      },
      { detail: { hide: true } },
    )
}
