/**
 * Answer bodies on Bun.serve: an answer completed after an `await` with a string body vs the same
 * bytes as a stream of one chunk (src/http/answer.ts `answerBody`), by size, in one run, with the
 * CPU the server process used per answer, user and kernel (bench/lib/cpu.ts). Bun.serve corks the
 * socket only while a handler runs synchronously: a later answer's status line and headers leave
 * in one send() each, and a long string body after them costs loopback ~15× the kernel time.
 */
import { STREAMED_BODY_BYTES } from '../../src/http/answer'
import type { AnswerShape } from '../figures'
import { processTicks, TICKS_PER_SECOND } from '../lib/cpu'
import { startServer } from '../lib/processes'
import { recordResult, sectionHead, writeSection } from '../lib/results'
import { CONNECTIONS, DURATION_SECONDS } from '../lib/settings'
import { round } from '../lib/stats'
import { wrk } from '../lib/wrk'
import { TARGETS } from '../targets'

export const name = 'answers'
export const target = TARGETS[name]

const SIZES = [1_000, 8_000, 12_000, 16_000, 48_000]
const BODIES = ['string', 'stream'] as const

export async function run(): Promise<void> {
  const shapes: AnswerShape[] = []
  for (const bytes of SIZES)
    for (const body of BODIES) {
      const server = await startServer('answer', 3891, { ANSWER_BYTES: String(bytes), ANSWER_BODY: body })
      try {
        const url = 'http://127.0.0.1:3891/'
        await wrk(url, { duration: 2 })
        const before = processTicks(server.pid)
        const result = await wrk(url)
        const after = processTicks(server.pid)
        if (result.errors || result.non2xx) throw new Error(`answers ${bytes} ${body}: ${result.errors} errors, ${result.non2xx} non-2xx`)
        const answers = result.requestsPerSecond * DURATION_SECONDS
        const per = (ticks: number) => Number(((ticks * (1e6 / TICKS_PER_SECOND)) / answers).toFixed(1))
        shapes.push({ bytes, body, requestsPerSecond: result.requestsPerSecond, p50: result.p50, p99: result.p99, userMicros: per(after.user - before.user), kernelMicros: per(after.kernel - before.kernel) })
        console.log(`answers: ${bytes} B as a ${body}: ${round(result.requestsPerSecond)} req/s, ${per(after.user - before.user)} + ${per(after.kernel - before.kernel)} µs`)
      } finally {
        await server.stop()
      }
    }
  const of = (bytes: number, body: AnswerShape['body']) => shapes.find((shape) => shape.bytes === bytes && shape.body === body)!
  writeSection(
    name,
    `## Answer bodies: a string vs a stream of one chunk, on Bun.serve, answered after an \`await\`

${sectionHead(`\`npm run bench -- answers\` (wrk, 1 thread, ${CONNECTIONS} connections, ${DURATION_SECONDS} s after a 2 s warm-up; bench/servers/answer.ts: Bun.serve answering after a \`setImmediate\`, with a v1 list answer's four headers; a fresh process per shape; CPU per answer from /proc/<pid>/stat over the measured run)`)}
- The service sends a body of ${round(STREAMED_BODY_BYTES)} bytes or more as a stream of one chunk (src/http/answer.ts \`answerBody\`; chunked, no Content-Length). ${target.bodies}

| bytes | string req/s | µs user + kernel | stream req/s | µs user + kernel | stream ÷ string |
|---:|---:|---:|---:|---:|---:|
${SIZES.map((bytes) => {
  const [text, stream] = [of(bytes, 'string'), of(bytes, 'stream')]
  return `| ${round(bytes)} | ${round(text.requestsPerSecond)} | ${text.userMicros} + ${text.kernelMicros} | ${round(stream.requestsPerSecond)} | ${stream.userMicros} + ${stream.kernelMicros} | **${round(stream.requestsPerSecond / text.requestsPerSecond, 2)}** |`
}).join('\n')}`,
  )
  recordResult(name, { shapes })
}
