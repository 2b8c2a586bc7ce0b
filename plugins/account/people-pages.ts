/** The People page (administrators) and the invitation link's page: plain HTML, every value escaped, no inline script. */
import { html, type Html } from '../../src/http/html'
import type { Invitation, PendingInvitation } from '../auth/api'
import { EMAIL_MAX, PASSWORD_MAX, PEOPLE_Q_MAX } from '../auth/api'
import { layout, type Frame } from './pages'

export type PeopleStatus = 'active' | 'deactivated' | 'invited'
export const PEOPLE_STATUSES: readonly PeopleStatus[] = ['active', 'deactivated', 'invited']

/** A person as the People page lists them (an administrator's view of the list). */
export interface PersonRow {
  id: string
  username: string
  displayName: string
  email?: string
  role?: string
  status?: string
}

export interface PeopleView {
  frame: Frame
  people: PersonRow[]
  status: PeopleStatus
  q: string
  total: number
  /** The link of the next page, when there is one. */
  next?: string
  /** A link just issued: shown this once. */
  invited?: Invitation
  error?: string
}

const ROLE_LABELS: Record<string, string> = { member: 'Member', administrator: 'Administrator', superadministrator: 'Superadministrator' }

/** The query string that lists `status` with `q` (what a form on the page returns to). */
export const listQuery = (status: PeopleStatus, q: string) => new URLSearchParams({ status, ...(q ? { q } : {}) }).toString()

/** The hidden fields that bring a form's answer back to the list it was sent from. */
const backTo = (view: PeopleView) => html`<input type="hidden" name="csrf" value="${view.frame.csrf}" />
  <input type="hidden" name="list" value="${view.status}" />
  <input type="hidden" name="q" value="${view.q}" />`

function roleForm(view: PeopleView, person: PersonRow): Html {
  const viewer = view.frame.user?.role
  // Only a superadministrator grants or removes the superadministrator role.
  if (person.role === 'superadministrator' && viewer !== 'superadministrator') return html`${ROLE_LABELS[person.role]}`
  const roles = viewer === 'superadministrator' ? ['member', 'administrator', 'superadministrator'] : ['member', 'administrator']
  return html`<form method="post" action="/account/people/${person.id}" class="inline">
    ${backTo(view)}
    <select name="role" aria-label="Role of ${person.username}">${roles.map((role) => html`<option value="${role}" ${role === person.role ? html`selected` : ''}>${ROLE_LABELS[role]}</option>`)}</select>
    <button type="submit" class="secondary">Change role</button>
  </form>`
}

function statusForms(view: PeopleView, person: PersonRow): Html {
  if (person.role === 'superadministrator' && view.frame.user?.role !== 'superadministrator') return html``
  const change = (status: string, label: string, confirm?: string) => html`<form method="post" action="/account/people/${person.id}" class="inline" ${confirm ? html`data-confirm="${confirm}"` : ''}>
    ${backTo(view)}
    <input type="hidden" name="status" value="${status}" />
    <button type="submit" class="${status === 'deactivated' ? 'danger' : 'secondary'}">${label}</button>
  </form>`
  const reissue = html`<form method="post" action="/account/people/${person.id}/invite" class="inline" data-confirm="Issue a new link for ${person.username}? The previous link stops working.">
    ${backTo(view)}
    <button type="submit" class="secondary">New link</button>
  </form>`
  if (person.status === 'active') return change('deactivated', 'Deactivate', `Deactivate ${person.username}? Their keys and sessions stop working at once.`)
  if (person.status === 'deactivated') return change('active', 'Reactivate')
  return html`${reissue} ${change('deactivated', 'Withdraw', `Withdraw the invitation of ${person.username}? Their link stops working.`)}`
}

export function peoplePage(view: PeopleView): Html {
  const { frame, people, status, q, invited, error } = view
  return layout(
    { ...frame, title: 'People', active: 'people' },
    html`${
      invited
        ? html`<section class="secret card" aria-live="polite">
      <h2>Invitation for ${invited.email}</h2>
      <p class="warning">Copy the link now and send it to them: it is shown this once. It works once, until ${invited.inviteExpiresAt.slice(0, 16).replace('T', ' ')} UTC.</p>
      <div class="copy-row"><code id="invite-link">${invited.inviteUrl}</code> <button type="button" data-copy="#invite-link">Copy</button></div>
    </section>`
        : ''
    }
    ${error ? html`<p class="error" role="alert">${error}</p>` : ''}
    <section class="card">
      <h2>Invite someone</h2>
      <form method="post" action="/account/people" class="invite">
        ${backTo(view)}
        <label>Email <input type="email" name="email" required maxlength="${EMAIL_MAX}" /></label>
        <label>Username (optional) <input type="text" name="username" maxlength="64" placeholder="from the email" /></label>
        <label>Display name (optional) <input type="text" name="displayName" maxlength="200" placeholder="the username" /></label>
        <label>Role <select name="role"><option value="member" selected>Member</option><option value="administrator">Administrator</option></select></label>
        <button type="submit">Invite</button>
      </form>
    </section>
    <section class="card">
      <form method="get" action="/account/people" class="filters">
        <label>Status <select name="status">${(['active', 'deactivated', 'invited'] as const).map((each) => html`<option value="${each}" ${each === status ? html`selected` : ''}>${each[0]!.toUpperCase() + each.slice(1)}</option>`)}</select></label>
        <label>Name or email starts with <input type="text" name="q" value="${q}" maxlength="${PEOPLE_Q_MAX}" /></label>
        <button type="submit" class="secondary">Show</button>
      </form>
      <p class="muted" data-total>${view.total} ${status} ${view.total === 1 ? 'person' : 'people'}${q ? html` matching “${q}”` : ''}</p>
      ${
        people.length
          ? html`<table class="people">
        <thead><tr><th>Username</th><th>Name</th><th>Email</th><th>Role</th><th>Status</th><th></th></tr></thead>
        <tbody>${people.map(
          (person) => html`<tr data-user="${person.id}">
          <td>${person.username}</td>
          <td>${person.displayName}</td>
          <td>${person.email ?? ''}</td>
          <td>${roleForm(view, person)}</td>
          <td><span class="status status-${person.status ?? ''}">${person.status ?? ''}</span></td>
          <td>${statusForms(view, person)}</td>
        </tr>`,
        )}</tbody>
      </table>`
          : html`<p class="muted">Nobody here.</p>`
      }
      ${view.next ? html`<p><a href="${view.next}" rel="next">Next page</a></p>` : ''}
    </section>`,
  )
}

/** The invitation link's page: whom it is for, and the new password (twice). */
export function invitePage(invitation: PendingInvitation, token: string, formToken: string, error?: string): Html {
  return layout(
    { title: `Join ${invitation.organizationName}` },
    html`${error ? html`<p class="error" role="alert">${error}</p>` : ''}
    <form method="post" action="/account/invite/${token}" class="card">
      <p>You were invited to <strong>${invitation.organizationName}</strong> as <strong>${invitation.displayName}</strong> (${invitation.username}). You will sign in with <strong>${invitation.email}</strong>.</p>
      <input type="hidden" name="csrf" value="${formToken}" />
      <input type="email" name="email" autocomplete="username" value="${invitation.email}" hidden />
      <label>Choose a password (at least 8 characters) <input type="password" name="password" autocomplete="new-password" minlength="8" maxlength="${PASSWORD_MAX}" required /></label>
      <label>The same password again <input type="password" name="confirm" autocomplete="new-password" minlength="8" maxlength="${PASSWORD_MAX}" required /></label>
      <button type="submit">Set password and sign in</button>
    </form>`,
  )
}

/** An unknown, used, voided or expired link: the same page for all (which one is never said). */
export function inviteInvalidPage(): Html {
  return layout(
    { title: 'Invitation link not valid' },
    html`<section class="card">
      <p class="error" role="alert">This invitation link is not valid. It may have been used already, replaced by a newer link, or expired.</p>
      <p>Ask an administrator of your organization for a new link. If you already chose your password, <a href="/account/sign-in">sign in</a>.</p>
    </section>`,
  )
}
