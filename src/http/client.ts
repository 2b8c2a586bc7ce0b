/**
 * The caller's network address. The runtime entry knows the socket's peer and hands it over with
 * the request; behind a proxy, `server.trustProxy` makes the first X-Forwarded-For entry count.
 */
const peers = new WeakMap<Request, string>()

export interface ConnectionInfo {
  /** The socket peer's address, as the runtime reports it. */
  ip?: string
}

/** Records what the runtime knows about the connection of `request`. */
export function rememberConnection(request: Request, info: ConnectionInfo | undefined): void {
  if (info?.ip) peers.set(request, info.ip)
}

/** The address to attribute `request` to ('unknown' when nobody said). */
export function clientAddress(request: Request, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = request.headers.get('x-forwarded-for')?.split(',')[0]?.trim()
    if (forwarded) return forwarded
  }
  return peers.get(request) ?? 'unknown'
}

/** True when the browser reached us over HTTPS (directly, or at a proxy we trust). */
export function isSecureRequest(request: Request, trustProxy: boolean): boolean {
  return new URL(request.url).protocol === 'https:' || (trustProxy && request.headers.get('x-forwarded-proto') === 'https')
}
