/**
 * `@username` mentions in a text: a `@` that does not follow a letter, digit or one of `_.-@`
 * (so `a@b.example` is an e-mail, not a mention), then a username as the auth plugin allows it
 * (a letter or digit, then letters, digits, `_`, `.`, `-`). A mention ending in `.`, `-` or `_`
 * (`thanks @ada.`) names either username, with or without that end: both are asked for. Usernames
 * are matched as written (they are unique as written); at most MENTIONS_MAX distinct mentions
 * per change, the first ones written: more are ignored.
 */
export const MENTIONS_MAX = 50

const USERNAME_MAX = 64
const MENTION = /(?<![A-Za-z0-9_.@-])@([A-Za-z0-9][A-Za-z0-9_.-]*)/g

/** The usernames `texts` mention (see above), in order of first appearance, from at most MENTIONS_MAX mentions. */
export function mentionedUsernames(...texts: ReadonlyArray<string | null | undefined>): string[] {
  const mentions = new Set<string>()
  const names = new Set<string>()
  for (const text of texts) {
    if (!text) continue
    for (const match of text.matchAll(MENTION)) {
      const written = match[1]!
      if (written.length > USERNAME_MAX || mentions.has(written)) continue
      if (mentions.size === MENTIONS_MAX) return [...names]
      mentions.add(written)
      names.add(written)
      const trimmed = written.replace(/[_.-]+$/, '')
      if (trimmed) names.add(trimmed)
    }
  }
  return [...names]
}
