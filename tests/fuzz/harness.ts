/**
 * The fuzzing loop: builds the world and the catalog once, then for each generated case sends the
 * request in-process (`service.fetch`), checks the answer's shape and status, what the service
 * logged meanwhile (no unexpected error), and the change log: a refused request must not have
 * committed anything (documented side effects aside).
 */
import fc from 'fast-check'
import { queryText } from '../../src/db'
import { SessionsRef } from '../../plugins/auth/api'
import { type PrincipalUser } from '../../src/services/identity'
import type { TestService } from '../helpers/service'
import { buildRequest, caseOf, CSRF_PLACEHOLDER, pageNamePlaceholder, describeRequest, mcpBodies, type BuildContext, type BuiltRequest, type Case } from './cases'
import { installChangeLog, type Change, type ChangeLog, type Table } from './checksum'
import type { IdPools } from './generate'
import type { LoggedError } from './logged'
import { checkAnswer, checkLogged, resolveOperation, type Answer } from './oracle'
import { catalog, type Operation } from './routes'
import { createFuzzWorld, plain, type FuzzWorld } from './world'

/** Shrinking re-sends requests against a world that moved on; it stops this long after the first failure. */
const SHRINK_BUDGET_MS = 15_000

export interface FuzzReport {
  /** The seed this run used. */
  seed: number
  runs: number
  sent: number
  /** Answers checked to have changed nothing. */
  unchanged: number
  /** Answers that may have changed data (successes of writes). */
  changed: number
  byStatus: Record<number, number>
  seconds: number
  /** The failure (after shrinking, and the first one seen), or null. */
  failure: string | null
}

/**
 * How often each operation is picked, against 8 for most. MCP carries every tool and the display
 * API is the hot path: more. Less where a request costs several queries on PGlite for little more
 * to find: the account area (sessions, scrypt, HTML), the static document, deletes (which never
 * get an all-real path, so they mostly end in a lookup and a 404), and what ends or rotates the
 * session or key it runs with (a fresh session is made for each).
 */
function weightOf(op: Operation): number {
  if (op.template === '/mcp' && op.method === 'POST') return 64
  if (op.template === '/api/component' || op.template === '/api/message') return 16
  if (op.template.startsWith('/docs')) return 1
  if (op.endsSession || op.template.endsWith('/rotate')) return 2
  if (op.family === 'account-page' || op.family === 'account-api' || op.family === 'live-page') return 4
  if (op.method === 'DELETE') return 4
  return 8
}

/** True when the answer may have changed data: a success of anything but a read, or a tool call that ran. */
function mayHaveChanged(method: string, op: Operation | null, answer: Answer): boolean {
  if (method === 'GET' || method === 'HEAD') return false
  if (op?.family === 'mcp') {
    const messages = Array.isArray(answer.json) ? answer.json : [answer.json]
    return answer.status < 300 && messages.some((message: any) => message?.result && message.result.isError !== true && Array.isArray(message.result.content))
  }
  return answer.status < 400
}

/** Tables a refused request may still change, as documented. */
function allowedChanges(op: Operation | null, request: BuiltRequest, answer: Answer): Table[] {
  if (!op) return []
  const allowed: Table[] = []
  // Every display call with a valid key counts against the daily limit, except one refused with 429.
  if ((op.template === '/api/component' || op.template === '/api/message') && request.usedDisplayKey && answer.status !== 429) allowed.push('display_usage')
  // Failed sign-ins are counted per account and per address.
  if (op.template === '/account/sign-in' || op.template === '/account/api/sessions') allowed.push('sign_in_throttle')
  return allowed
}

export class Fuzzer {
  private world!: FuzzWorld
  private ops!: Operation[]
  private changes!: ChangeLog
  private mcpTools: Array<{ name: string; inputSchema: any }> = []
  private displayClock = Math.floor(Date.now() / 1000)
  private disposableUser: PrincipalUser | null = null
  private firstFailure: string | null = null
  private shrinkDeadline = 0
  private readonly counts = { sent: 0, unchanged: 0, changed: 0, byStatus: {} as Record<number, number> }

  /** `logged`: the error lines the service logs (errorRecorder), read after each request. */
  constructor(
    private readonly api: TestService,
    private readonly logged: LoggedError[],
  ) {}

  /** The world, the catalog (from the served OpenAPI document), the MCP tools and the change log. */
  async setup(): Promise<void> {
    this.world = await createFuzzWorld(this.api)
    const docs = await plain(this.api).request('GET', '/docs/json')
    if (docs.status !== 200) throw new Error(`GET /docs/json answered ${docs.status}`)
    this.ops = catalog(docs.body)
    const list = await plain(this.api).request('POST', '/mcp', {
      key: this.world.keys.superadministrator,
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      headers: { accept: 'application/json, text/event-stream' },
    })
    this.mcpTools = list.body?.result?.tools ?? []
    if (!this.mcpTools.length) throw new Error(`MCP tools/list answered ${list.status} ${list.text.slice(0, 200)}`)
    this.changes = await installChangeLog(this.api.database)
  }

  /** Closes the change log's connections (to the Citus workers); before the service stops. */
  close(): Promise<void> {
    return this.changes?.close() ?? Promise.resolve()
  }

  /**
   * What the change log reports for writes whose answer is known: a committed no-op update (seen),
   * a rolled-back update, a row inserted and deleted again and a `last_used_at` touch (none of
   * them), and a real edit undone (both seen).
   */
  async selfTest(): Promise<{ committed: string[]; ignored: string[]; edited: string[] }> {
    const db = this.api.service.core.db
    const changes = this.changes
    const names = (list: Change[]) => list.map((change) => `${change.op} ${change.table}`)
    const teamId = this.world.ids.teamId[0]!
    await changes.mark()
    await queryText(db, 'update teams set name = name where id = $1', [teamId])
    const committed = names(await changes.since())
    await db
      .transaction(async (tx) => {
        await queryText(tx, 'update teams set name = name where id = $1', [teamId])
        tx.rollback()
      })
      .catch(() => {})
    await queryText(db, `insert into sign_in_throttle (key, failures) values ('fuzz:self-test', 1)`, [])
    await queryText(db, `delete from sign_in_throttle where key = 'fuzz:self-test'`, [])
    await queryText(db, 'update api_keys set last_used_at = now()', [])
    const ignored = names(await changes.since())
    await queryText(db, `update api_keys set name = name || '.' where name = 'fuzz no scope'`, [])
    await queryText(db, `update api_keys set name = 'fuzz no scope' where name = 'fuzz no scope.'`, [])
    const edited = names(await changes.since())
    return { committed, ignored, edited }
  }

  private pools(): IdPools {
    const { cast, display } = this.world
    return {
      ...this.world.ids,
      // Page names can change (a fuzzed PATCH renames a page): bodies carry placeholders.
      pageName: this.world.pageNames.map((_, index) => pageNamePlaceholder(index)),
      apiKey: [this.world.displayKey],
      csrf: [CSRF_PLACEHOLDER],
      email: [cast.owner.email, cast.superadministrator.email, display.reader.email, 'nobody@example.com'],
      password: [cast.owner.password, cast.superadministrator.password, 'reader password', 'wrong password'],
      scopes: this.api.service.core.scopes.map((scope) => scope.name),
    }
  }

  /** Every case: an operation (weighted) and its request. */
  arbitrary(): fc.Arbitrary<Case> {
    const pools = this.pools()
    const mcp = mcpBodies(this.mcpTools, pools)
    return fc.oneof(...this.ops.map((op, index) => ({ arbitrary: caseOf(index, op, pools, mcp), weight: weightOf(op) })))
  }

  /** Runs `runs` cases from `seed`; never throws for a failing case (the report carries it). */
  async run(runs: number, seed: number): Promise<FuzzReport> {
    const started = Date.now()
    const result = await fc.check(
      fc.asyncProperty(this.arbitrary(), (fuzzCase) => this.runCase(fuzzCase)),
      { numRuns: runs, seed },
    )
    let failure: string | null = null
    if (result.failed) {
      const shrunk = result.errorInstance instanceof Error ? result.errorInstance.message : String(result.errorInstance)
      failure = [
        shrunk,
        '',
        `first failure (before ${result.numShrinks} shrinking step(s), against the world as it was then):`,
        this.firstFailure,
        '',
        `replay this lane alone: FUZZ_LANES=1 FUZZ_RUNS=${runs} FUZZ_SEED=${result.seed} (fast-check path ${result.counterexamplePath})`,
      ].join('\n')
    }
    return { seed, runs, ...this.counts, seconds: (Date.now() - started) / 1000, failure }
  }

  /** Records the first failure (its message survives shrinking) and starts the shrinking clock. */
  private fail(message: string): never {
    if (!this.firstFailure) {
      this.firstFailure = message
      this.shrinkDeadline = Date.now() + SHRINK_BUDGET_MS
    }
    throw new Error(message)
  }

  private async runCase(fuzzCase: Case): Promise<boolean> {
    // Out of shrinking time: every further candidate "passes", so shrinking ends at once.
    if (this.shrinkDeadline && Date.now() > this.shrinkDeadline) return true
    try {
      return await this.exchange(fuzzCase)
    } catch (error) {
      if (error instanceof Error && error.message.includes(' problem(s) with ')) throw error
      const text = fc.stringify(fuzzCase)
      return this.fail(`the harness failed on a case (a fuzz-suite bug): ${error instanceof Error ? error.stack : String(error)}\n  case: ${text.length > 1500 ? `${text.slice(0, 1500)}…` : text}`)
    }
  }

  /** A fresh session of the display reader, for requests that end the session they carry. */
  private async disposableSession(kind: 'mobile' | 'web'): Promise<string> {
    const sessions = this.api.service.core.services.get(SessionsRef)
    this.disposableUser ??= await sessions.verifyCredentials(this.world.display.reader.email, 'reader password')
    const { token } = await sessions.start(this.disposableUser!, kind, null)
    this.changes.forget()
    return token
  }

  /** Sends one case, then checks its answer and the change log. */
  private async exchange(fuzzCase: Case): Promise<boolean> {
    const context: BuildContext = {
      world: this.world,
      ops: this.ops,
      now: () => ++this.displayClock,
      disposableSession: (kind) => this.disposableSession(kind),
    }
    const request = await buildRequest(fuzzCase, context)
    const url = new URL(`http://localhost${request.path}`)
    const reached = resolveOperation(this.ops, request.method, url.pathname)
    await this.changes.baseline()
    const loggedBefore = this.logged.length
    const answer = await this.send(request)
    const problems = checkAnswer({ op: reached, method: request.method, pathname: url.pathname }, answer, request.headers['x-request-id'])
    problems.push(...checkLogged(this.logged.slice(loggedBefore)))

    if (mayHaveChanged(request.method, reached, answer)) {
      this.counts.changed++
      this.changes.forget()
      await this.afterSuccess(reached)
    } else {
      this.counts.unchanged++
      const changed = await this.changes.since(allowedChanges(reached, request, answer))
      for (const change of changed.slice(0, 5)) problems.push(`refused, yet ${change.op} on ${change.table}: ${change.row.length > 300 ? `${change.row.slice(0, 300)}…` : change.row}`)
      if (changed.length > 5) problems.push(`… and ${changed.length - 5} more changes`)
    }
    if (!problems.length) return true
    return this.fail(
      [
        `${problems.length} problem(s) with ${reached ? `${reached.method} ${reached.template}` : 'an unknown route'}:`,
        ...problems.map((problem) => `  - ${problem}`),
        `  request: ${describeRequest(request)}`,
        `  answer: ${answer.status} ${answer.headers.get('content-type') ?? ''} ${JSON.stringify(answer.text.length > 400 ? `${answer.text.slice(0, 400)}…` : answer.text)}`,
      ].join('\n'),
    )
  }

  private async send(request: BuiltRequest): Promise<Answer> {
    const response = await this.api.service.fetch(new Request(`http://${request.host}${request.path}`, { method: request.method, headers: request.headers, body: request.body as BodyInit | undefined }))
    this.counts.sent++
    this.counts.byStatus[response.status] = (this.counts.byStatus[response.status] ?? 0) + 1
    const type = response.headers.get('content-type') ?? ''
    // A live page's event stream stays open: its status and headers are the answer.
    if (type.startsWith('text/event-stream')) {
      await response.body?.cancel()
      return { status: response.status, headers: response.headers, text: '', json: undefined, isJson: false }
    }
    const text = await response.text()
    let json: unknown
    let isJson = false
    if (type.startsWith('application/json')) {
      try {
        json = JSON.parse(text)
        isJson = true
      } catch {
        // reported by the oracle as "not JSON"
      }
    }
    return { status: response.status, headers: response.headers, text, json, isJson }
  }

  /** Keeps the world usable after a success: current page names, and no component stuck in the far future. */
  private async afterSuccess(op: Operation | null): Promise<void> {
    if (!op) return
    const db = this.api.service.core.db
    if (op.template === '/api/v1/pages/{pageId}') {
      const rows = await queryText<{ name: string }>(db, 'select name from pages where id = any($1::uuid[]) order by created_at', [this.world.ids.pageId])
      this.world.pageNames.splice(0, Infinity, ...rows.map((row) => row.name))
    }
    if (op.template === '/api/component') await queryText(db, 'update components set data_timestamp = 0 where data_timestamp > $1', [this.displayClock])
  }
}
