/**
 * The look of the service's plain pages: the landing page (`/`) and the account area, whose
 * stylesheet starts with this one. Served by the core at PAGE_CSS_PATH (the pages' CSP allows
 * same-origin stylesheets only, and no inline style).
 */

export const PAGE_CSS_PATH = '/assets/page.css'

export const PAGE_CSS = `
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #6a737d; --bg: #f6f8fa; --card: #fff; --accent: #0b5cad; --danger: #b42318; --line: #d0d7de; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #8b949e; --bg: #0d1117; --card: #161b22; --accent: #58a6ff; --danger: #f85149; --line: #30363d; } }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; gap: 1.5rem; align-items: center; padding: .75rem 1.5rem; background: var(--card); border-bottom: 1px solid var(--line); }
header nav { display: flex; gap: 1rem; }
header nav a { color: var(--muted); text-decoration: none; }
header nav a.active { color: var(--fg); font-weight: 600; }
main { max-width: 960px; margin: 0 auto; padding: 1.5rem; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 1rem 1.25rem; margin-bottom: 1.25rem; }
ul.cards { list-style: none; padding: 0; margin: 0 0 1.25rem; display: grid; gap: .75rem; grid-template-columns: repeat(auto-fill, minmax(16rem, 1fr)); }
ul.cards .card { margin: 0; }
ul.cards a { color: var(--accent); font-weight: 600; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
code { font-family: ui-monospace, monospace; }
.error { color: var(--danger); }
.muted { color: var(--muted); }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; }
`

/** The stylesheet's answer: cached for an hour, never sniffed as anything but CSS. */
export const pageCssResponse = () =>
  new Response(PAGE_CSS, { headers: { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=3600', 'x-content-type-options': 'nosniff' } })
