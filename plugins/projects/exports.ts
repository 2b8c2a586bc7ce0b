/**
 * A project's export: NDJSON, one consistent snapshot, streamed with flat memory.
 *
 * Every line is `{"type": …, "data": …}` with `data` exactly as API v1 shows the resource: first
 * the project, then each section the enabled plugins added (ProjectTransfersFace), lowest `order`
 * first: labels, custom fields, members, work items, entries, relationships. All of it is read in
 * one read-only REPEATABLE READ transaction (one snapshot: a write meanwhile is in all of it or in
 * none), page by page by each section's index, and a page is read only once the client has taken
 * what came before (the stream's queue holds about a MiB): a 1M-item project costs the same
 * memory as a small one. A client that stops reading ends the export after
 * `server.exportIdleSeconds`, rolling the snapshot back and freeing its connection; at most
 * `exportsAtOnce` run at once per instance (each holds a connection of the pool).
 *
 * On the embedded database (one connection for everything) the snapshot is read through without
 * waiting for the client, so a slow reader never holds the database: its memory is the export's
 * size there.
 */
import { sql } from 'drizzle-orm'
import { queryRows, queryText, type Database, type Transaction } from '../../src/db'
import type { Logger } from '../../src/log'
import type { Actor } from '../../src/services/identity'
import { readAfter, type ExportSection, type ProjectAccessService } from './api'
import { grantColumns, grantsFrom, MEMBER } from './grant-kinds'
import { serializeGrant, type GrantRow } from './grants'
import { PROJECT_COLUMNS, serializeProject, type ProjectFields } from './service'
import { places, sectionList } from './transfer-sections'

/** Resources read per statement: a page of 200 work items is at most ~10 MB even with every description at its limit. */
export const EXPORT_PAGE = 200
/** Bytes queued for the client before the next page waits for it to read. */
const QUEUED_BYTES = 1024 * 1024

/** Why an export ended before its last line. */
class ExportStopped extends Error {}

export interface ExportDeps {
  db: Database
  /** `pglite`: one connection for everything (see above). */
  databaseKind: string
  access: ProjectAccessService
  idleSeconds: number
  atOnce: number
  log: Logger
}

export function createExports({ db, databaseKind, access, idleSeconds, atOnce, log }: ExportDeps) {
  const sections = sectionList<ExportSection>('export', 'projects:read', [projectSection(), memberSection()])
  const running = places(atOnce, 'export')
  return {
    /** Adds a section (ProjectTransfersFace.exportSection). */
    register: sections.register,
    /** The scopes the export needs: `projects:read` and every section's. */
    scopes: sections.scopes,
    types: sections.types,

    /** The project's export as a streamed `application/x-ndjson` response (owner; 404 when the project is not visible). */
    async open(actor: Actor, projectId: string, signal?: AbortSignal): Promise<Response> {
      await access.requireProjectAccess(actor, projectId, 'owner')
      const release = running.take()
      const { organizationId } = actor
      const body = snapshotStream({
        waitForReader: databaseKind !== 'pglite',
        idleMs: idleSeconds * 1000,
        signal,
        run: (emit) =>
          db.transaction(
            async (tx) => {
              for (const section of sections.ordered()) {
                let after: string | null = null
                do {
                  const page: { rows: unknown[]; after: string | null } = await section.read(tx, organizationId, projectId, after, EXPORT_PAGE)
                  if (page.rows.length) await emit(page.rows.map((data) => JSON.stringify({ type: section.type, data })).join('\n') + '\n')
                  after = page.after
                } while (after !== null)
              }
            },
            { isolationLevel: 'repeatable read', accessMode: 'read only' },
          ),
        done: (error) => {
          release()
          if (error && !(error instanceof ExportStopped)) log.error('project export failed', { projectId, organizationId, message: (error as Error).message })
          else if (error) log.info('project export ended early', { projectId, organizationId, reason: error.message })
        },
      })
      return new Response(body, {
        status: 200,
        headers: {
          'content-type': 'application/x-ndjson; charset=utf-8',
          'cache-control': 'no-store',
          'content-disposition': `attachment; filename="project-${projectId}.ndjson"`,
          'x-accel-buffering': 'no',
        },
      })
    },
  }

}

export type ProjectExports = ReturnType<typeof createExports>

/**
 * A stream of what `run` emits. With `waitForReader`, `emit` returns once the client has room for
 * more (about a MiB queued), and throws when the client went away or read nothing for `idleMs`,
 * which ends `run` (its transaction rolls back). `done` is told how it ended, once.
 */
function snapshotStream(options: {
  run: (emit: (text: string) => Promise<void>) => Promise<unknown>
  waitForReader: boolean
  idleMs: number
  signal?: AbortSignal
  done: (error?: Error) => void
}): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  let controller!: ReadableStreamDefaultController<Uint8Array>
  let stopped: ExportStopped | undefined
  let wake: ((stop?: ExportStopped) => void) | undefined
  const stop = (reason: string) => {
    stopped ??= new ExportStopped(reason)
    wake?.(stopped)
  }
  options.signal?.addEventListener('abort', () => stop('the client went away'), { once: true })

  const emit = async (text: string) => {
    if (stopped) throw stopped
    controller.enqueue(encoder.encode(text))
    if (!options.waitForReader) return
    while ((controller.desiredSize ?? 0) <= 0) {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => stop(`the client read nothing for ${options.idleMs / 1000} s`), options.idleMs)
        wake = (reason) => {
          clearTimeout(timer)
          wake = undefined
          if (reason) reject(reason)
          else resolve()
        }
      })
    }
  }

  // Closing or failing a stream the client already cancelled throws: there is nobody left to tell.
  const settle = (end: () => void) => {
    try {
      end()
    } catch {}
  }
  return new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c
        // An export that fails part-way is cut off (no last chunk), so the client cannot take it for the whole project.
        void options.run(emit).then(
          () => {
            settle(() => controller.close())
            options.done()
          },
          (error: Error) => {
            settle(() => controller.error(error))
            options.done(error)
          },
        )
      },
      pull() {
        wake?.()
      },
      cancel() {
        stop('cancelled')
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: QUEUED_BYTES }),
  )
}

/** The project's own line (first). */
function projectSection(): ExportSection {
  return {
    type: 'project',
    order: 0,
    scope: 'projects:read',
    async read(tx, organizationId, projectId) {
      const rows = await queryText<ProjectFields>(tx, `select ${PROJECT_COLUMNS} from projects p where p.id = $1 and p.organization_id = $2`, [projectId, organizationId])
      return { rows: rows.map(serializeProject), after: null }
    },
  }
}

/** The project's members as `GET …/members` shows them, by user id. */
function memberSection(): ExportSection {
  return {
    type: 'member',
    order: 30,
    scope: 'projects:read',
    read: (tx: Transaction, organizationId, projectId, after, limit) =>
      readAfter(
        () =>
          queryRows<GrantRow & { after: string }>(
            tx,
            sql`select ${sql.raw(grantColumns(MEMBER))}, g.user_id::text as after from ${sql.raw(grantsFrom(MEMBER))}
                 where g.project_id = ${projectId} and g.organization_id = ${organizationId} and (${after}::uuid is null or g.user_id > ${after}::uuid)
                 order by g.user_id limit ${limit}`,
          ),
        limit,
        (row) => serializeGrant(MEMBER, row),
      ),
  }
}
