/** Static assets of the account pages (served from memory; no inline script anywhere). */

export const ACCOUNT_CSS = `
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #6a737d; --bg: #f6f8fa; --card: #fff; --accent: #0b5cad; --danger: #b42318; --line: #d0d7de; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #8b949e; --bg: #0d1117; --card: #161b22; --accent: #58a6ff; --danger: #f85149; --line: #30363d; } }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; gap: 1.5rem; align-items: center; padding: .75rem 1.5rem; background: var(--card); border-bottom: 1px solid var(--line); }
header nav { display: flex; gap: 1rem; }
header nav a { color: var(--muted); text-decoration: none; }
header nav a.active { color: var(--fg); font-weight: 600; }
.sign-out { margin-left: auto; display: flex; gap: .75rem; align-items: center; color: var(--muted); }
main { max-width: 960px; margin: 0 auto; padding: 1.5rem; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 1rem 1.25rem; margin-bottom: 1.25rem; }
label { display: block; margin: .5rem 0; }
input[type=text], input[type=email], input[type=password], input[type=date] { display: block; width: 100%; max-width: 28rem; padding: .45rem .6rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); }
button { padding: .45rem .9rem; border: 1px solid var(--line); border-radius: 6px; background: var(--accent); color: #fff; cursor: pointer; }
button.danger { background: transparent; color: var(--danger); border-color: var(--danger); }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
table.scopes label { display: inline; margin: 0; }
fieldset { border: 1px solid var(--line); border-radius: 6px; margin: .75rem 0; }
code { font-family: ui-monospace, monospace; }
.secret code { font-size: 1rem; padding: .3rem .5rem; background: var(--bg); border-radius: 4px; word-break: break-all; }
.copy-row { display: flex; gap: .5rem; align-items: center; }
.warning { color: var(--danger); font-weight: 600; }
.error { color: var(--danger); }
.muted { color: var(--muted); }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; }
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
