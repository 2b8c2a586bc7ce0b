/**
 * A project's import: the export's NDJSON (or a CSV of work items) into a project that has no work
 * items yet, all or nothing, in one transaction.
 *
 * The body is read line by line (NDJSON lines of at most IMPORT_LINE_BYTES, the whole of at most
 * IMPORT_MAX_BYTES) and grouped by type; then each section the enabled plugins added writes its
 * lines, lowest `order` first (labels and custom fields before the work items that carry them,
 * work items before their entries and relationships), set based, remapping every reference to
 * the new ids. A line a section cannot import is refused by number; the import then writes
 * nothing and answers 400 with the first 20 (`line 1207: status …`). What is imported otherwise
 * than given (an assignee not in the organization: unassigned) is reported in `notes`. One audit
 * record `project.imported` with the counts, and one `project.imported` event: no record or event
 * per item.
 */
import { parse as parseCsv } from 'csv-parse'
import { Readable } from 'node:stream'
import { BodyProblem, parseJsonText } from '../../src/http/body'
import { ApiError, badRequest, MAX_ERROR_ITEMS, type ErrorItem } from '../../src/http/errors'
import type { Actor } from '../../src/services/identity'
import { isAdministrator } from '../../src/services/identity'
import type { Writes } from '../../src/writes'
import type { UserDirectory } from '../auth/api'
import { projectMembers } from './schema'
import { places, sectionList } from './transfer-sections'
import { ACCESS_LEVELS, type AccessLevel, type ImportContext, type ImportLine, type ImportSection, type ProjectAccessService } from './api'

/** The most a body may hold. */
export const IMPORT_MAX_BYTES = 64 * 1024 * 1024
/** The most lines (or CSV records) an import takes: a body of many short lines would otherwise cost memory per line past its bytes. */
export const IMPORT_MAX_LINES = 250_000
/** The longest NDJSON line (one work item with a 50,000-character description fits many times). */
export const IMPORT_LINE_BYTES = 1024 * 1024

/** The CSV columns of a work item (a header row names them; any order, any case, others refused). */
export const CSV_COLUMNS: readonly string[] = 'title description status priority assignee labels dueDate'.split(' ')

/** An import refused for its lines: 400 naming each (at most 20). */
class ImportRefused extends ApiError {
  constructor(readonly items: ErrorItem[]) {
    super(400, 'BAD_REQUEST', items[0]!.message)
  }
  override toItems(): ErrorItem[] {
    return this.items
  }
}

export interface ImportDeps {
  writes: Writes
  access: ProjectAccessService
  /** Imports read and written at once per instance (each holds its body in memory, then a connection); more are 503. */
  atOnce: number
  /** How long a body may take to arrive (`projects.importReadSeconds`). */
  readSeconds: number
}

export interface ImportResult {
  projectId: string
  /** Resources written, by line type. */
  imported: Record<string, number>
  /** What was imported otherwise than given (the first 20), each `line N: …`. */
  notes: string[]
}

export function createImports({ writes, access, atOnce, readSeconds }: ImportDeps) {
  const sections = sectionList<ImportSection>('import', 'projects:write')
  const running = places(atOnce, 'import')

  return {
    register: sections.register,
    /** The scopes the import needs: `projects:write` and every section's. */
    scopes: sections.scopes,
    types: sections.types,

    /** Imports the body of `request` into the project (owner): NDJSON as the export writes it, or a CSV of work items. */
    async run(actor: Actor, projectId: string, request: Request): Promise<ImportResult> {
      await access.requireProjectAccess(actor, projectId, 'owner')
      let release: () => void
      try {
        release = running.take()
      } catch (error) {
        await request.body?.cancel().catch(() => {})
        throw error
      }
      try {
        return await importBody(actor, projectId, request)
      } finally {
        release()
      }
    },
  }

  async function importBody(actor: Actor, projectId: string, request: Request): Promise<ImportResult> {
    const media = (request.headers.get('content-type') ?? '').split(';', 1)[0]!.trim().toLowerCase()
    const known = new Set(['project', ...sections.types()])
    const refusals: { line: number; message: string }[] = []
    // Only the first 20 in line order are answered: however many lines a section refuses, the list stays short.
    const refuse = (line: number, message: string) => {
      refusals.push({ line, message })
      if (refusals.length > 1000) refusals.splice(0, refusals.length, ...lineOrder(refusals))
    }
    // While the body is read, lines come in order: the 20th refused one ends the reading (a body of
    // millions of bad lines would otherwise cost a refusal each).
    const refuseWhileReading = (line: number, message: string) => {
      refuse(line, message)
      if (refusals.length >= MAX_ERROR_ITEMS) throw refused(refusals)
    }
    let byType: Map<string, ImportLine[]>
    if (media === 'application/x-ndjson') byType = await readNdjson(bodyChunks(request, readSeconds), known, refuseWhileReading)
    else if (media === 'text/csv') byType = await readCsv(bodyChunks(request, readSeconds), refuseWhileReading)
    else throw badRequest('Content-Type must be application/x-ndjson (as the export writes it) or text/csv (work items).')
    if (refusals.length) throw refused(refusals)
    if (![...byType].some(([type, lines]) => type !== 'project' && lines.length)) throw badRequest('The body holds nothing to import.')

    return writes.change(actor, 'project', async (w) => {
      const notes: { line: number; message: string }[] = []
      const ids = new Map<string, Map<string, string>>()
      const context: ImportContext = {
        actor,
        projectId,
        administrator: isAdministrator(actor),
        lines: (type) => byType.get(type) ?? [],
        ids: (type) => ids.get(type) ?? ids.set(type, new Map()).get(type)!,
        refuse,
        note: (line, message) => void notes.push({ line, message }),
      }
      const imported: Record<string, number> = {}
      // A section that refused lines ends the import there: later ones would refuse what refers to them.
      for (const section of sections.ordered()) {
        imported[section.type] = await section.write(w, context)
        if (refusals.length) throw refused(refusals)
      }
      await w.audit({ action: 'project.imported', resourceType: 'project', resourceId: projectId, projectId, changes: { after: { imported } } })
      await w.emit({ type: 'project.imported', projectId, data: { projectId, imported } })
      return { projectId, imported, notes: lineOrder(notes).map(({ line, message }) => `line ${line}: ${message}`) }
    })
  }
}

export type ProjectImports = ReturnType<typeof createImports>

const lineOrder = <T extends { line: number }>(items: T[]) => [...items].sort((a, b) => a.line - b.line).slice(0, MAX_ERROR_ITEMS)

function refused(refusals: { line: number; message: string }[]): ImportRefused {
  return new ImportRefused(lineOrder(refusals).map(({ line, message }) => ({ code: 'BAD_REQUEST', message: `line ${line}: ${message}` })))
}

/**
 * The body's bytes, at most IMPORT_MAX_BYTES, arriving within `seconds` (400 past either: a client
 * trickling its body, or stopping mid-body, would otherwise hold an import's place).
 */
async function* bodyChunks(request: Request, seconds: number): AsyncGenerator<Uint8Array> {
  if (Number(request.headers.get('content-length') ?? 0) > IMPORT_MAX_BYTES) throw tooLarge()
  if (!request.body) return
  const reader = request.body.getReader()
  // A clock of its own: a client that stops sending mid-body is cut off whatever the runtime's idle timeout.
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(badRequest(`An import body must arrive within ${seconds} s.`)), seconds * 1000)))
  late.catch(() => {})
  let total = 0
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), late])
      if (done) return
      total += value.byteLength
      if (total > IMPORT_MAX_BYTES) throw tooLarge()
      yield value
    }
  } finally {
    clearTimeout(timer)
    reader.cancel().catch(() => {})
  }
}
const tooLarge = () => badRequest(`An import body may hold at most ${IMPORT_MAX_BYTES / 1024 / 1024} MiB.`)
const tooManyLines = () => badRequest(`An import may hold at most ${IMPORT_MAX_LINES.toLocaleString('en-US')} lines.`)

/** NDJSON lines grouped by type: each `{type, data}` with `data` an object; blank lines skipped. */
async function readNdjson(chunks: AsyncIterable<Uint8Array>, known: ReadonlySet<string>, refuse: (line: number, message: string) => void): Promise<Map<string, ImportLine[]>> {
  const byType = new Map<string, ImportLine[]>()
  const decoder = new TextDecoder('utf-8', { fatal: true })
  let pending = ''
  let number = 0
  let taken = 0
  const take = (text: string) => {
    number++
    if (!text.trim()) return
    if (text.length > IMPORT_LINE_BYTES) return refuse(number, `longer than ${IMPORT_LINE_BYTES / 1024 / 1024} MiB`)
    // The body parser's checks, a line at a time: nesting depth, NUL characters, lone surrogates.
    const value = parseJsonText(text)
    if (value instanceof BodyProblem) return refuse(number, value.error.message === 'The request body is not valid JSON.' ? 'not a JSON object' : value.error.message.replace('The request body', 'The line'))
    const { type, data } = (value ?? {}) as { type?: unknown; data?: unknown }
    if (typeof type !== 'string' || !data || typeof data !== 'object' || Array.isArray(data)) return refuse(number, 'a line is {"type": …, "data": {…}}')
    if (!known.has(type)) return refuse(number, `unknown type "${type.slice(0, 40)}"; known: ${[...known].join(', ')}`)
    if (++taken > IMPORT_MAX_LINES) throw tooManyLines()
    const lines = byType.get(type) ?? byType.set(type, []).get(type)!
    lines.push({ line: number, data: data as Record<string, unknown> })
  }
  try {
    for await (const chunk of chunks) {
      pending += decoder.decode(chunk, { stream: true })
      for (let end = pending.indexOf('\n'); end >= 0; end = pending.indexOf('\n')) {
        take(pending.slice(0, end))
        pending = pending.slice(end + 1)
      }
      if (pending.length > IMPORT_LINE_BYTES) throw badRequest(`line ${number + 1} is longer than ${IMPORT_LINE_BYTES / 1024 / 1024} MiB`)
    }
    pending += decoder.decode()
  } catch (error) {
    if (error instanceof TypeError) throw badRequest('The body is not valid UTF-8.')
    throw error
  }
  if (pending) take(pending)
  return byType
}

/**
 * A CSV of work items (a header row, then one work item a row: CSV_COLUMNS), through `csv-parse`,
 * as the lines an NDJSON import would give: `work_item` lines (labels by name, the assignee by
 * email or username) and a `label` line for each label name they carry.
 */
async function readCsv(chunks: AsyncIterable<Uint8Array>, refuse: (line: number, message: string) => void): Promise<Map<string, ImportLine[]>> {
  const items: ImportLine[] = []
  const labels = new Map<string, ImportLine>()
  const parser = Readable.from(chunks).pipe(
    parseCsv({ bom: true, columns: (header: string[]) => header.map((name) => name.trim()), skip_empty_lines: true, max_record_size: IMPORT_LINE_BYTES, info: true }),
  )
  let columns: string[] | undefined
  // A record's first line: the one after the previous record's last (and the empty lines skipped
  // since), its last that plus the line breaks inside its cells (csv-parse's own count takes a CRLF
  // inside quotes for two).
  let previousEnd = 1
  let previousEmpty = 0
  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: Record<string, string>; info: { empty_lines: number } }>) {
      const line = previousEnd + 1 + (info.empty_lines - previousEmpty)
      if (Object.values(record).some((cell) => cell.includes('\u0000'))) {
        refuse(line, 'a cell holds the character U+0000 (NUL), which text cannot hold')
        continue
      }
      previousEnd = line + Object.values(record).reduce((breaks, cell) => breaks + (cell.match(/\r\n|\r|\n/g)?.length ?? 0), 0)
      previousEmpty = info.empty_lines
      if (!columns) {
        columns = Object.keys(record)
        const wanted = new Map(CSV_COLUMNS.map((column) => [column.toLowerCase(), column]))
        const unknown = columns.filter((column) => !wanted.has(column.toLowerCase()))
        if (unknown.length) {
          refuse(1, `unknown column "${unknown[0]!.slice(0, 40)}"; the columns are ${CSV_COLUMNS.join(', ')}`)
          return new Map()
        }
        if (!columns.some((column) => column.toLowerCase() === 'title')) {
          refuse(1, 'the header row has no title column')
          return new Map()
        }
      }
      const cells = Object.fromEntries(
        CSV_COLUMNS.map((name) => {
          const key = columns!.find((column) => column.toLowerCase() === name.toLowerCase())
          const cell = key === undefined ? undefined : record[key]?.trim()
          return [name, cell === undefined || cell === '' ? undefined : cell]
        }),
      ) as Record<string, string | undefined>
      const names = (cells.labels ?? '')
        .split(',')
        .map((name) => name.trim())
        .filter(Boolean)
      for (const name of names) if (!labels.has(name.toLowerCase())) labels.set(name.toLowerCase(), { line, data: { name } })
      if (items.length >= IMPORT_MAX_LINES) throw tooManyLines()
      const { priority } = cells
      items.push({
        line,
        data: {
          title: cells.title ?? '',
          description: cells.description ?? null,
          ...(cells.status ? { status: cells.status } : {}),
          ...(priority !== undefined ? { priority: /^-?\d+$/.test(priority) ? Number(priority) : priority } : {}),
          ...(cells.assignee ? { assignee: cells.assignee } : {}),
          labels: names.map((name) => ({ name })),
          dueDate: cells.dueDate ?? null,
        },
      })
    }
  } catch (error) {
    if (error instanceof ApiError) throw error
    throw badRequest(`The CSV could not be read: ${(error as Error).message.slice(0, 200)}`)
  }
  const byType = new Map<string, ImportLine[]>()
  if (labels.size) byType.set('label', [...labels.values()])
  byType.set('work_item', items)
  return byType
}

/**
 * The project's members from `member` lines: each active user of the organization (by id, else by
 * username) gets the line's access level; the importer stays owner; anyone else is left out and
 * noted. One statement for all of them.
 */
export function memberImportSection(users: UserDirectory): ImportSection {
  return {
    type: 'member',
    order: 30,
    scope: 'projects:write',
    async write({ tx }, context) {
      const lines = context.lines('member')
      if (!lines.length) return 0
      const refsOf = (data: Record<string, unknown>) =>
        [data.userId, (data.user as { username?: unknown } | undefined)?.username].filter((ref): ref is string => typeof ref === 'string' && ref !== '')
      const found = await users.activeUsersNamed(tx, context.actor.organizationId, lines.flatMap(({ data }) => refsOf(data)))
      const granted = new Map<string, AccessLevel>([[context.actor.userId, 'owner']])
      for (const { line, data } of lines) {
        const level = data.accessLevel as AccessLevel
        if (!ACCESS_LEVELS.includes(level)) {
          context.refuse(line, `accessLevel: one of ${ACCESS_LEVELS.join(', ')}`)
          continue
        }
        const userId = refsOf(data)
          .map((ref) => found.get(ref))
          .find(Boolean)
        if (!userId) context.note(line, `${refsOf(data)[0] ?? 'the member'} is not an active user of this organization: not added`)
        else if (!granted.has(userId)) granted.set(userId, level)
      }
      granted.delete(context.actor.userId)
      if (!granted.size) return 0
      await tx
        .insert(projectMembers)
        .values([...granted].map(([userId, accessLevel]) => ({ projectId: context.projectId, userId, organizationId: context.actor.organizationId, accessLevel })))
        .onConflictDoNothing()
      return granted.size
    },
  }
}
