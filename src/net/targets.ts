/**
 * Where the service may connect on someone's say-so (a webhook's URL, a browser's Web Push
 * endpoint). A target URL is http(s), without credentials, and (unless the caller's switch,
 * `webhooks.allowPrivateTargets` or `push.webPush.allowPrivateTargets`, is on) every address its host resolves to is public unicast by
 * ipaddr.js's ranges: no loopback, private, shared (CGNAT), link-local, unique-local, multicast,
 * reserved, documentation or benchmarking address, in any spelling, and no IPv6 form that carries
 * such an IPv4 address (mapped, translated, compatible, NAT64, 6to4, Teredo). The check runs when a
 * target is saved (400) and again at every delivery, on the very addresses the connection then
 * uses (`pinnedLookup`), so a name that resolves elsewhere later (DNS rebinding) is refused too.
 */
import ipaddr from 'ipaddr.js'
import { isIP } from 'node:net'
import { lookup } from 'node:dns'
import { badRequest } from '../http/errors'
import { excerpt } from '../http/validation-items'

export const URL_MAX = 2000
const RESOLVE_TIMEOUT_MS = 3000

type IPv4 = ipaddr.IPv4
type IPv6 = ipaddr.IPv6

/** Every global unicast allocation lies in 2000::/3; the rest of the IPv6 space is reserved or local. */
const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3') as [IPv6, number]
/** The well-known NAT64 prefix (RFC 6052): its last 32 bits are the IPv4 address. */
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96') as [IPv6, number]
/** IPv4-compatible addresses (deprecated, RFC 4291 §2.5.5.1): ::a.b.c.d. ipaddr.js has no range for them. */
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96') as [IPv6, number]

const ipv4Of = (high: number, low: number): IPv4 => new ipaddr.IPv4([high >> 8, high & 255, low >> 8, low & 255])

/**
 * The IPv4 addresses an IPv6 address carries, which must all be public for it to be; undefined
 * when it carries none; null when it is refused whatever it carries (local-use NAT64,
 * 64:ff9b:1::/48, is local by definition and places the IPv4 address by its own prefix length).
 */
function embeddedIpv4(address: IPv6): IPv4[] | null | undefined {
  const parts = address.parts
  switch (address.range() as string) {
    case 'ipv4Mapped': // ::ffff:a.b.c.d
    case 'rfc6145': // ::ffff:0:a.b.c.d (translated)
      return [ipv4Of(parts[6]!, parts[7]!)]
    case 'rfc6052':
      return address.match(NAT64_WELL_KNOWN) ? [ipv4Of(parts[6]!, parts[7]!)] : null
    case '6to4': // 2002:AABB:CCDD::/48
      return [ipv4Of(parts[1]!, parts[2]!)]
    case 'teredo': // 2001:0:<server>:<flags>:<port>:<client, bit-inverted>
      return [ipv4Of(parts[2]!, parts[3]!), ipv4Of(~parts[6]! & 0xffff, ~parts[7]! & 0xffff)]
  }
  if (address.match(IPV4_COMPATIBLE)) return [ipv4Of(parts[6]!, parts[7]!)]
  return undefined
}

const isPublicIpv4 = (address: IPv4) => address.range() === 'unicast'

/**
 * Whether a webhook may connect to `address`: an IP literal as node:net spells them (IPv4 as four
 * decimal parts, IPv6 in any spelling), parsed by ipaddr.js and public unicast by its ranges.
 */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address)
  // ipaddr.js also reads octal, hex and short IPv4 forms; node:net (and so the connection) does not.
  if (family === 4) return ipaddr.IPv4.isValidFourPartDecimal(address) && isPublicIpv4(ipaddr.IPv4.parse(address))
  if (family !== 6 || !ipaddr.IPv6.isValid(address)) return false
  const parsed = ipaddr.IPv6.parse(address)
  const inner = embeddedIpv4(parsed)
  if (inner === null) return false
  if (inner !== undefined) return inner.every(isPublicIpv4)
  return parsed.range() === 'unicast' && parsed.match(GLOBAL_UNICAST)
}

/** The URL's host as a lookup takes it (IPv6 literals without brackets). */
export const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1')

/** Parses and checks the form of a target URL; 400 naming `field` otherwise. */
export function parseTargetUrl(value: string, field = 'url'): URL {
  if (value.length > URL_MAX) throw badRequest(`The URL is longer than ${URL_MAX} characters.`, field)
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw badRequest('Must be an absolute http:// or https:// URL.', field)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw badRequest('Must be an absolute http:// or https:// URL.', field)
  if (url.username || url.password) throw badRequest('The URL must not carry a user name or password; authenticate receivers by the signature.', field)
  if (!url.hostname) throw badRequest('The URL has no host.', field)
  return url
}

/** Every address `host` resolves to (an IP literal: itself). */
export function resolveAll(host: string): Promise<{ address: string; family: number }[]> {
  const family = isIP(host)
  if (family) return Promise.resolve([{ address: host, family }])
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`resolving ${excerpt(host)} took longer than ${RESOLVE_TIMEOUT_MS / 1000} s`)), RESOLVE_TIMEOUT_MS)
    lookup(host, { all: true, verbatim: true }, (error, addresses) => {
      clearTimeout(timer)
      if (error) reject(new Error(`${excerpt(host)} does not resolve (${(error as NodeJS.ErrnoException).code ?? error.message})`))
      else resolve(addresses)
    })
  })
}

export class RefusedTarget extends Error {}

/** The addresses of `host` if all of them are allowed; throws RefusedTarget naming the first that is not. */
export async function allowedAddresses(host: string, allowPrivate: boolean, setting = 'webhooks.allowPrivateTargets'): Promise<{ address: string; family: number }[]> {
  const addresses = await resolveAll(host)
  if (!addresses.length) throw new RefusedTarget(`${excerpt(host)} resolves to no address`)
  if (!allowPrivate)
    for (const { address } of addresses)
      if (!isPublicAddress(address))
        throw new RefusedTarget(`${excerpt(host)} resolves to ${address}, a loopback, private, link-local or otherwise non-public address (${setting} is off)`)
  return addresses
}

/** Checks a target when it is saved: 400 on `field` for a refused or unresolvable host. */
export async function checkTarget(value: string, allowPrivate: boolean, field = 'url', setting?: string): Promise<string> {
  const url = parseTargetUrl(value, field)
  try {
    await allowedAddresses(hostOf(url), allowPrivate, setting)
  } catch (error) {
    throw badRequest(`The target is refused: ${(error as Error).message}.`, field)
  }
  return url.toString()
}

/**
 * A `lookup` for node:http that answers only with checked addresses: the connection goes to the
 * addresses that passed, whatever the name resolves to a moment later.
 */
export function pinnedLookup(allowPrivate: boolean, setting?: string) {
  return (hostname: string, options: { all?: boolean; family?: number }, callback: (...args: any[]) => void) => {
    allowedAddresses(hostname, allowPrivate, setting).then(
      (addresses) => {
        const usable = options.family ? addresses.filter((entry) => entry.family === options.family) : addresses
        if (!usable.length) return callback(Object.assign(new Error(`${hostname} has no IPv${options.family} address`), { code: 'ENOTFOUND' }))
        if (options.all) callback(null, usable)
        else callback(null, usable[0]!.address, usable[0]!.family)
      },
      (error) => callback(error),
    )
  }
}
