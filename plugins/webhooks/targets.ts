/**
 * Where a webhook may point. A target URL is http(s), without credentials, and (unless
 * `webhooks.allowPrivateTargets`) every address its host resolves to is public: no loopback,
 * private, shared (CGNAT), link-local, unique-local, multicast or reserved address, also not
 * inside an IPv4-mapped or NAT64 IPv6 address. The check runs when a webhook is saved (400) and
 * again at every delivery, on the very addresses the connection then uses (`pinnedLookup`), so a
 * name that resolves elsewhere later (DNS rebinding) is refused too.
 */
import { BlockList, isIP } from 'node:net'
import { lookup } from 'node:dns'
import { badRequest } from '../../src/http/errors'

export const URL_MAX = 2000
const RESOLVE_TIMEOUT_MS = 3000

const blocked = new BlockList()
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // shared address space (carrier-grade NAT)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata services live here)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const)
  blocked.addSubnet(network, prefix, 'ipv4')
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
  ['2001:db8::', 32], // documentation
  ['100::', 64], // discard
] as const)
  blocked.addSubnet(network, prefix, 'ipv6')

/** The IPv4 address carried in an IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible or NAT64 (64:ff9b::/96) IPv6 address. */
function embeddedIpv4(address: string): string | undefined {
  const lower = address.toLowerCase()
  const dotted = /^(?:::ffff:|::|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower)
  if (dotted) return dotted[1]
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower)
  if (!hex) return undefined
  const high = parseInt(hex[1]!, 16)
  const low = parseInt(hex[2]!, 16)
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`
}

/** Whether a webhook may connect to `address` (an IP literal). */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 4) return !blocked.check(address, 'ipv4')
  if (family !== 6) return false
  const inner = embeddedIpv4(address)
  if (inner !== undefined) return isPublicAddress(inner)
  return !blocked.check(address, 'ipv6')
}

/** The URL's host as a lookup takes it (IPv6 literals without brackets). */
export const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1')

/** Parses and checks the form of a target URL; 400 naming `url` otherwise. */
export function parseTargetUrl(value: string): URL {
  if (value.length > URL_MAX) throw badRequest(`The URL is longer than ${URL_MAX} characters.`, 'url')
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw badRequest('Must be an absolute http:// or https:// URL.', 'url')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw badRequest('Must be an absolute http:// or https:// URL.', 'url')
  if (url.username || url.password) throw badRequest('The URL must not carry a user name or password; authenticate receivers by the signature.', 'url')
  if (!url.hostname) throw badRequest('The URL has no host.', 'url')
  return url
}

/** Every address `host` resolves to (an IP literal: itself). */
export function resolveAll(host: string): Promise<{ address: string; family: number }[]> {
  const family = isIP(host)
  if (family) return Promise.resolve([{ address: host, family }])
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`resolving ${host} took longer than ${RESOLVE_TIMEOUT_MS / 1000} s`)), RESOLVE_TIMEOUT_MS)
    lookup(host, { all: true, verbatim: true }, (error, addresses) => {
      clearTimeout(timer)
      if (error) reject(new Error(`${host} does not resolve (${(error as NodeJS.ErrnoException).code ?? error.message})`))
      else resolve(addresses)
    })
  })
}

export class RefusedTarget extends Error {}

/** The addresses of `host` if all of them are allowed; throws RefusedTarget naming the first that is not. */
export async function allowedAddresses(host: string, allowPrivate: boolean): Promise<{ address: string; family: number }[]> {
  const addresses = await resolveAll(host)
  if (!addresses.length) throw new RefusedTarget(`${host} resolves to no address`)
  if (!allowPrivate)
    for (const { address } of addresses)
      if (!isPublicAddress(address))
        throw new RefusedTarget(`${host} resolves to ${address}, a loopback, private, link-local or otherwise non-public address (webhooks.allowPrivateTargets is off)`)
  return addresses
}

/** Checks a target when a webhook is saved: 400 on `url` for a refused or unresolvable host. */
export async function checkTarget(value: string, allowPrivate: boolean): Promise<string> {
  const url = parseTargetUrl(value)
  try {
    await allowedAddresses(hostOf(url), allowPrivate)
  } catch (error) {
    throw badRequest(`The target is refused: ${(error as Error).message}.`, 'url')
  }
  return url.toString()
}

/**
 * A `lookup` for node:http that answers only with checked addresses: the connection goes to the
 * addresses that passed, whatever the name resolves to a moment later.
 */
export function pinnedLookup(allowPrivate: boolean) {
  return (hostname: string, options: { all?: boolean; family?: number }, callback: (...args: any[]) => void) => {
    allowedAddresses(hostname, allowPrivate).then(
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
