/** Static assets of the account pages (served from memory; no inline script anywhere). */
import { PAGE_CSS } from '../../src/http/page-style'

/** The account pages' stylesheet: the service's page look (src/http/page-style.ts, as on `/`), then the forms'. */
export const ACCOUNT_CSS = `${PAGE_CSS}
.sign-out { margin-left: auto; display: flex; gap: .75rem; align-items: center; color: var(--muted); }
label { display: block; margin: .5rem 0; }
input[type=text], input[type=email], input[type=password], input[type=date] { display: block; width: 100%; max-width: 28rem; padding: .45rem .6rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); }
button { padding: .45rem .9rem; border: 1px solid var(--line); border-radius: 6px; background: var(--accent); color: #fff; cursor: pointer; }
button.danger { background: transparent; color: var(--danger); border-color: var(--danger); }
table.scopes label { display: inline; margin: 0; }
fieldset { border: 1px solid var(--line); border-radius: 6px; margin: .75rem 0; }
.secret code { font-size: 1rem; padding: .3rem .5rem; background: var(--bg); border-radius: 4px; word-break: break-all; }
.copy-row { display: flex; gap: .5rem; align-items: center; }
.warning { color: var(--danger); font-weight: 600; }
select { padding: .4rem .5rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); }
label select { display: block; margin-top: .2rem; }
button.secondary { background: transparent; color: var(--accent); border-color: var(--accent); }
form.inline { display: inline-flex; gap: .35rem; align-items: center; margin: 0 .25rem .25rem 0; }
form.inline select { display: inline-block; margin: 0; }
form.inline button { white-space: nowrap; }
form.filters { display: flex; flex-wrap: wrap; gap: 1rem; align-items: flex-end; }
form.filters label { margin: 0; }
form.filters input[type=text] { min-width: 16rem; }
.status { display: inline-block; padding: .05rem .45rem; border-radius: 999px; border: 1px solid var(--line); font-size: .85em; }
.status-active { color: var(--accent); border-color: var(--accent); }
.status-deactivated { color: var(--danger); border-color: var(--danger); }
.status-invited { color: var(--muted); }
table.people td { vertical-align: middle; }
`

export const ACCOUNT_JS = `
document.addEventListener('submit', (event) => {
  const form = event.target
  if (form instanceof HTMLFormElement && form.dataset.confirm && !window.confirm(form.dataset.confirm)) event.preventDefault()
})
document.addEventListener('click', async (event) => {
  const button = event.target instanceof Element ? event.target.closest('[data-copy]') : null
  if (!button) return
  const text = document.querySelector(button.dataset.copy)?.textContent ?? ''
  try { await navigator.clipboard.writeText(text); button.textContent = 'Copied' } catch { button.textContent = 'Select and copy' }
})
`
