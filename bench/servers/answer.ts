/**
 * The answers benchmark's server (bench/scenarios/answers.ts): Bun.serve answering every request
 * after an `await` (as the service answers anything that read the database) with ANSWER_BYTES of
 * JSON-like text and the headers of a v1 list answer, the body as a string (ANSWER_BODY=string) or as a stream of one chunk
 * (`stream`, as src/http/answer.ts `answerBody` sends a long answer).
 */
const bytes = Number(process.env.ANSWER_BYTES ?? 48_000)
const text = `{"data":"${'x'.repeat(Math.max(0, bytes - 11))}"}`
const encoded = new TextEncoder().encode(text)
const headers = {
  'content-type': 'application/json',
  etag: 'W/"l12_3.1rhla7usvmj1c"',
  link: '</api/v1/projects/fb9b7cf9-9dfe-4b3d-9d27-023b92313c72/work-items?size=100&page=0>; rel="first", </api/v1/projects/fb9b7cf9-9dfe-4b3d-9d27-023b92313c72/work-items?size=100&page=0>; rel="last"',
  'x-request-id': '219fd28c-2410-4cda-a65e-9fc03adb9e70',
}
const stream = process.env.ANSWER_BODY === 'stream'
/** A database round trip, as far as the event loop can tell: the answer is completed outside the handler's synchronous run. */
const roundTrip = () => new Promise((resolve) => setImmediate(resolve))
Bun.serve({
  port: Number(process.env.PORT ?? 3999),
  async fetch() {
    await roundTrip()
    if (!stream) return new Response(text, { headers })
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoded)
        controller.close()
      },
    })
    return new Response(body, { headers })
  },
})
