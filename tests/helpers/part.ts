/**
 * TEST_CASE_PART=k/n (1 ≤ k ≤ n): a long table of cases runs only every n-th case from the k-th
 * (`.ci/run` gives the authorization matrices a sixth of their cases on the Citus cluster, the
 * sixth rotating with the commit count as the rotating files do). Unset: every case.
 */
const part = (() => {
  const match = /^(\d+)\/(\d+)$/.exec(process.env.TEST_CASE_PART ?? '')
  if (!match) return null
  const [k, n] = [Number(match[1]), Number(match[2])]
  return n >= 1 && k >= 1 && k <= n ? { k, n } : null
})()

let counter = 0

/** Whether the next case of the file (counted in the order they are declared) is in this run's part. */
export function nextCaseInPart(): boolean {
  const index = counter++
  return part === null || index % part.n === part.k - 1
}

/** What a file's first describe says of the part: '' for every case, else ' (cases k of every n: TEST_CASE_PART)'. */
export const partNote = part === null ? '' : ` (every ${part.n}th case from the ${part.k}th: TEST_CASE_PART=${part.k}/${part.n})`
