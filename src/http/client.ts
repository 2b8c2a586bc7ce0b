/**
 * The caller's network address. The runtime entry knows the socket's peer and hands it over with
 * the request. Behind proxies (`server.trustProxy`: true for one hop, or the number of hops), each
 * trusted hop appended the address it saw to X-Forwarded-For, so the client is the entry added by
 * the outermost trusted hop, counted from the right; anything left of it came from the client and
 * is never believed.
 */
/** Where a request keeps its peer (a symbol property: ~1 ns, where a WeakMap cost ~100 ns a request). */
const PEER = Symbol('peer')
type WithPeer = Request & { [PEER]?: string | (() => string | undefined) }

export interface ConnectionInfo {
  /**
   * The socket peer's address, as the runtime reports it; or how to ask for it, asked only when
   * an answer needs it (Bun's `server.requestIP` cost each request ~0.5 µs whether read or not).
   */
  ip?: string | (() => string | undefined)
}

/** `server.trustProxy` as a number of trusted hops (false: 0, true: 1). */
export const trustedHops = (trustProxy: boolean | number): number => (trustProxy === true ? 1 : trustProxy === false ? 0 : trustProxy)

/** Records what the runtime knows about the connection of `request`. */
export function rememberConnection(request: Request, info: ConnectionInfo | undefined): void {
  if (info?.ip) (request as WithPeer)[PEER] = info.ip
}

/** The socket peer of `request` ('unknown' when nobody said), asked of the runtime once. */
function peerOf(request: Request): string {
  const known = (request as WithPeer)[PEER]
  if (typeof known !== 'function') return known ?? 'unknown'
  const asked = known() ?? 'unknown'
  ;(request as WithPeer)[PEER] = asked
  return asked
}

/** An address is a short token; anything longer came from a confused or hostile hop. */
const MAX_ADDRESS = 64

/** The address to attribute `request` to ('unknown' when nobody said), trusting `hops` proxies. */
export function clientAddress(request: Request, hops: number): string {
  const peer = peerOf(request)
  if (hops <= 0) return peer
  const forwarded = (request.headers.get('x-forwarded-for') ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
  if (!forwarded.length) return peer
  // hops = 1: the rightmost entry (added by the proxy we see); fewer entries than hops: the leftmost known.
  return forwarded[Math.max(0, forwarded.length - hops)]!.slice(0, MAX_ADDRESS)
}

/** True when the browser reached us over HTTPS (directly, or at the proxy we trust, which says so last). */
export function isSecureRequest(request: Request, hops: number): boolean {
  if (new URL(request.url).protocol === 'https:') return true
  return hops > 0 && request.headers.get('x-forwarded-proto')?.split(',').at(-1)?.trim().toLowerCase() === 'https'
}
