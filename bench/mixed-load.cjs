// The mixed load of bench/mixed.ts: one autocannon run (in Node, so the load generator is not the
// runtime under test) cycling through a fixed list of requests of several kinds, for a warm-up and
// then `windows` windows of `windowSeconds` each, without a pause between them. It reads the
// service's VmRSS from /proc/<pid>/status every second (one reading is at the mercy of where the
// garbage collector's sawtooth happens to be; a window's mean and minimum are not), and at the
// end of each window prints one JSON line:
//   {"window": i (0 = warm-up), "seconds", "rssMiB" (at the end), "rssMeanMiB", "rssMinMiB",
//    "rssMaxMiB", "hwmMiB", "responses", "p50", "p99",
//    "transportErrors", "errorSamples": [...], "kinds": {kind: {"count", "non2xx", "server", "toolErrors"}}}
// Usage: node bench/mixed-load.cjs <config.json>
// config: { url, pid, connections, warmupSeconds, windowSeconds, windows,
//           requests: [{ kind, method, path, headers, body?, paths?, bodies?, mcp? }] }
// `paths` / `bodies` rotate (one shared counter per request); `mcp` answers are JSON-RPC: a
// tool refusal (`isError`) or a JSON-RPC error is counted as a tool error, and as a server error
// when the refusal's status is 5xx.
const { readFileSync } = require('node:fs')
const autocannon = require('autocannon')
const Client = require('autocannon/lib/httpClient')

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'))

function memory() {
  let status
  try {
    status = readFileSync(`/proc/${config.pid}/status`, 'utf8')
  } catch {
    process.stderr.write(`mixed-load: the service (pid ${config.pid}) is gone\n`)
    process.exit(2)
  }
  const field = (name) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) / 1024
  return { rssMiB: field('VmRSS'), hwmMiB: field('VmHWM') }
}

function newWindow() {
  return { latencies: [], rss: [], transportErrors: 0, errorSamples: [], kinds: {} }
}
let current = newWindow()

// autocannon reconnects silently when the server closes a connection ('end'): the requests in
// flight on it are neither answered nor counted, and its queue of pending requests would pair
// later answers with the wrong requests. Every (re)connection after the first counts what was
// pending as lost (a transport error) and clears the queue.
const connect = Client.prototype._connect
Client.prototype._connect = function () {
  const pending = this.conn && this.pipelinedRequests ? this.pipelinedRequests.size() : 0
  if (pending > 0) {
    current.transportErrors += pending
    if (current.errorSamples.length < 5) current.errorSamples.push(`${pending} request(s) lost: connection closed before the answer`)
    this.pipelinedRequests.clear()
  }
  return connect.call(this)
}
// onResponse of the request runs right before the client's 'response' event, synchronously:
// it leaves the kind and verdict of the answer here for the event to book.
let last = null

const requests = config.requests.map((spec) => {
  let turn = 0
  const request = {
    method: spec.method,
    path: spec.path,
    headers: spec.headers,
    body: spec.body,
    onResponse(status, body) {
      let toolError = false
      let server = status >= 500
      if (spec.mcp && status >= 200 && status < 300) {
        if (body.includes('"isError":true') || !body.includes('"result":')) {
          toolError = true
          try {
            const answer = JSON.parse(body)
            if ((answer.result?.structuredContent?.status ?? 0) >= 500 || answer.error) server = true
          } catch {
            server = true
          }
        }
      }
      last = { kind: spec.kind, status, toolError, server }
    },
  }
  if (spec.paths || spec.bodies)
    request.setupRequest = (req) => {
      if (spec.paths) req.path = spec.paths[turn % spec.paths.length]
      if (spec.bodies) req.body = spec.bodies[turn % spec.bodies.length]
      turn++
      return req
    }
  return request
})

const instance = autocannon(
  {
    url: config.url,
    connections: config.connections,
    // Stopped by the window clock below; the duration is only a backstop.
    duration: config.warmupSeconds + config.windows * config.windowSeconds + 60,
    timeout: 10,
    requests,
  },
  (error) => {
    if (error) throw error
  },
)

instance.on('response', (_client, statusCode, _bytes, responseTime) => {
  current.latencies.push(responseTime)
  const answer = last ?? { kind: 'unknown', status: statusCode, toolError: false, server: statusCode >= 500 }
  last = null
  const kind = (current.kinds[answer.kind] ??= { count: 0, non2xx: 0, server: 0, toolErrors: 0 })
  kind.count++
  if (statusCode < 200 || statusCode >= 300) kind.non2xx++
  if (answer.server) kind.server++
  if (answer.toolError) kind.toolErrors++
})
instance.on('reqError', (error) => {
  current.transportErrors++
  if (current.errorSamples.length < 5) current.errorSamples.push(String(error?.message ?? error))
})

const percentile = (sorted, p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : 0)

const started = Date.now()
const rssClock = setInterval(() => current.rss.push(memory().rssMiB), 1000)
let index = 0
function closeWindow() {
  const closed = current
  current = newWindow()
  const end = started + (config.warmupSeconds + index * config.windowSeconds) * 1000
  const seconds = index === 0 ? config.warmupSeconds : config.windowSeconds
  const sorted = Float64Array.from(closed.latencies).sort()
  const now = memory()
  const rss = [...closed.rss, now.rssMiB]
  process.stdout.write(
    `${JSON.stringify({
      window: index,
      seconds,
      lateMs: Date.now() - end,
      ...now,
      rssMeanMiB: rss.reduce((sum, value) => sum + value, 0) / rss.length,
      rssMinMiB: Math.min(...rss),
      rssMaxMiB: Math.max(...rss),
      responses: closed.latencies.length,
      p50: percentile(sorted, 0.5),
      p99: percentile(sorted, 0.99),
      transportErrors: closed.transportErrors,
      errorSamples: closed.errorSamples,
      kinds: closed.kinds,
    })}\n`,
  )
  index++
  if (index > config.windows) {
    clearInterval(rssClock)
    instance.stop()
    return
  }
  // Scheduled from the start, so windows do not drift.
  setTimeout(closeWindow, Math.max(0, started + (config.warmupSeconds + index * config.windowSeconds) * 1000 - Date.now()))
}
setTimeout(closeWindow, config.warmupSeconds * 1000)
