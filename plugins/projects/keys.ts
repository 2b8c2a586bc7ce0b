/**
 * Project keys (`ENG`): what people say, and the prefix of work item keys (`ENG-123`). A key is 2
 * to 10 of A–Z and 0–9, starting with a letter, unique in the organization. Every key a project
 * has had, its current one included, stays in project_keys: an old key keeps resolving to its
 * project and is never given to another project of the organization (until the project is
 * deleted, its keys with it).
 *
 * Both writers take the key's two unique entries in one order, the project's row first
 * (projects_organization_key_unique), then its project_keys row, so two transactions wanting
 * one key wait for each other instead of deadlocking; the second then sees the key taken.
 */
import { queryText, type Transaction } from '../../src/db'
import { conflict } from '../../src/http/errors'
import { projectKeys, projects } from './schema'

type ProjectRow = typeof projects.$inferSelect
type NewProject = Omit<typeof projects.$inferInsert, 'key'> & { organizationId: string; name: string }

/** A key as a request may give it: any case (stored upper-case). */
export const PROJECT_KEY_PATTERN = '^[A-Za-z][A-Za-z0-9]{1,9}$'
export const PROJECT_KEY_WORDS = '2 to 10 letters and digits, starting with a letter (any case; stored upper-case)'

/** Derived keys tried before giving up under contention (each taken meanwhile by another transaction). */
const MAX_ATTEMPTS = 20

/**
 * The key a project's name suggests: the initials of its first four words when it has several
 * (`Mobile App` → `MA`), else its first three letters (`Engineering` → `ENG`); `PRJ` when the name
 * has fewer than two letters. Words are runs of letters, accents dropped (`Résumé` → `RESUME`).
 */
export function deriveKeyBase(name: string): string {
  const words = name.normalize('NFKD').replace(/\p{M}/gu, '').match(/[A-Za-z]+/g) ?? []
  const letters = words.join('')
  if (letters.length < 2) return 'PRJ'
  if (words.length > 1) return words.slice(0, 4).map((word) => word[0]).join('').toUpperCase()
  return letters.slice(0, 3).toUpperCase()
}

/** The `n`th key of a base: the base itself, then `ENG2`, `ENG3`… */
export const numberedKey = (base: string, n: number) => (n === 1 ? base : `${base}${n}`)

/** A `CONFLICT` naming `key`: it is, or was, a key of a project of the organization. */
export const keyTaken = () => conflict('This key is, or was, the key of a project of the organization (old keys keep resolving); choose another.', undefined, 'key')

/** Whether `error` is a unique violation (SQLSTATE 23505), however the driver wraps it. */
function isUniqueViolation(error: unknown): boolean {
  let current: any = error
  for (let depth = 0; current && depth < 4; depth++, current = current.cause) if (current.code === '23505') return true
  return false
}

/** The organization's keys, current and old, that are `base` or `base` and a number (those a derivation could hand out). */
async function keysLike(tx: Transaction, organizationId: string, base: string): Promise<Set<string>> {
  const pattern = `^${base}[0-9]*$`
  const rows = await queryText<{ key: string }>(
    tx,
    'select key from project_keys where organization_id = $1 and key ~ $2 union select key from projects where organization_id = $1 and key ~ $2',
    [organizationId, pattern],
  )
  return new Set(rows.map((row) => row.key))
}

/** Inserts the project with `key` and records the key. */
async function insertWithKey(tx: Transaction, values: NewProject, key: string): Promise<ProjectRow> {
  const [project] = await tx
    .insert(projects)
    .values({ ...values, key })
    .returning()
  await tx.insert(projectKeys).values({ key, organizationId: values.organizationId, projectId: project!.id })
  return project!
}

/**
 * Inserts a project in `tx` with the key given (upper-cased; 409 naming `key` when it is or was
 * any project's), or else one derived from its name: the first of `ENG`, `ENG2`… that no project
 * has or had. Each derived attempt runs in a savepoint, so one taken meanwhile by a concurrent
 * transaction (a unique violation) is rolled back alone and the next number tried.
 */
export async function insertProject(tx: Transaction, values: NewProject, given: string | undefined): Promise<ProjectRow> {
  if (given !== undefined) {
    try {
      return await insertWithKey(tx, values, given.toUpperCase())
    } catch (error) {
      throw isUniqueViolation(error) ? keyTaken() : error
    }
  }
  const base = deriveKeyBase(values.name)
  const taken = await keysLike(tx, values.organizationId, base)
  let failures = 0
  for (let n = 1; ; n++) {
    const key = numberedKey(base, n)
    if (taken.has(key)) continue
    try {
      return await tx.transaction((savepoint) => insertWithKey(savepoint as Transaction, values, key))
    } catch (error) {
      if (!isUniqueViolation(error) || ++failures >= MAX_ATTEMPTS) throw error
      taken.add(key)
    }
  }
}

/**
 * Gives the locked project `projectId` the new `key` (upper-case, not its current one) in `tx`:
 * runs `update` (the project row's change, key included), then records the key. 409 naming `key`
 * when another project has it now, or any project (this one too) had it.
 */
export async function changeKey<T>(tx: Transaction, organizationId: string, projectId: string, key: string, update: () => Promise<T>): Promise<T> {
  let updated: T
  try {
    updated = await update()
  } catch (error) {
    throw isUniqueViolation(error) ? keyTaken() : error
  }
  const recorded = await queryText(tx, 'insert into project_keys (key, organization_id, project_id) values ($1, $2, $3) on conflict do nothing returning key', [key, organizationId, projectId])
  if (!recorded.length) throw keyTaken()
  return updated
}
