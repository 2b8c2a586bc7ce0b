/** A server-sent events reader that keeps every event with its arrival time, for waiting on one. */

export interface ReceivedEvent {
  event: string
  data: any
  receivedAt: number
}

export interface EventStream {
  events: ReceivedEvent[]
  /** Resolves with the first event (already received or coming) that matches, or null on timeout. */
  waitFor(predicate: (event: ReceivedEvent) => boolean, timeoutMs: number): Promise<ReceivedEvent | null>
  close(): void
}

/** Opens `url` as an event stream; resolves once the server's `: connected` comment arrived. */
export async function openEventStream(url: string, headers: Record<string, string>): Promise<EventStream> {
  const abort = new AbortController()
  const response = await fetch(url, { headers: { ...headers, accept: 'text/event-stream' }, signal: abort.signal })
  if (response.status !== 200) throw new Error(`${url}: ${response.status} ${await response.text()}`)
  const events: ReceivedEvent[] = []
  const waiters = new Set<() => void>()
  let connected!: () => void
  const isConnected = new Promise<void>((resolve) => (connected = resolve))
  void (async () => {
    const decoder = new TextDecoder()
    let buffer = ''
    const reader = response.body!.getReader()
    try {
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
        buffer += decoder.decode(chunk.value, { stream: true })
        let end: number
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          if (/^: connected$/m.test(block)) connected()
          const event = /^event: (.*)$/m.exec(block)?.[1]
          const data = /^data: (.*)$/m.exec(block)?.[1]
          if (event && data) events.push({ event, data: JSON.parse(data), receivedAt: performance.now() })
        }
        for (const wake of waiters) wake()
      }
    } catch {
      // aborted by close()
    }
  })()
  const ready = await Promise.race([isConnected.then(() => true), Bun.sleep(5000).then(() => false)])
  if (!ready) {
    abort.abort()
    throw new Error(`${url}: no ": connected" within 5 s`)
  }
  return {
    events,
    async waitFor(predicate, timeoutMs) {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const found = events.find(predicate)
        if (found) return found
        const left = deadline - Date.now()
        if (left <= 0) return null
        let wake!: () => void
        const woken = new Promise<void>((resolve) => (wake = resolve))
        waiters.add(wake)
        await Promise.race([woken, Bun.sleep(left)])
        waiters.delete(wake)
      }
    },
    close: () => abort.abort(),
  }
}
