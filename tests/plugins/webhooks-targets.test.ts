/**
 * Where webhooks may point when `webhooks.allowPrivateTargets` is off: every spelling of
 * an address is parsed (ipaddr.js), every range that is not public unicast is refused, and the
 * IPv6 forms that carry an IPv4 address (mapped, translated, compatible, NAT64, 6to4, Teredo) are
 * judged by that IPv4 address too, when a webhook is saved (and when a delivery connects:
 * webhooks-refused-delivery.test.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { isPublicAddress } from '../../src/net/targets'
import { queryText } from '../../src/db'
import { startTestService, type TestService } from '../helpers/service'

/** IPv6 spellings of private, link-local and loopback IPv4 addresses (169.254.169.254 is a9fe:a9fe; 127.0.0.1 is 7f00:1). */
const HIDDEN_PRIVATE_IPV6 = [
  '64:ff9b:1::a9fe:a9fe', // local-use NAT64 (RFC 8215)
  '64:ff9b:1:0:0:0:a9fe:a9fe',
  '64:ff9b:0:0:0:0:a9fe:a9fe', // well-known NAT64, uncompressed
  '64:ff9b::169.254.169.254',
  '0064:ff9b:0000:0000:0000:0000:7f00:0001',
  '2002:a9fe:a9fe::1', // 6to4 of 169.254.169.254
  '2002:7f00:1::', // 6to4 of 127.0.0.1
  '2002:0a00:0001:0:0:0:0:1', // 6to4 of 10.0.0.1
  '2001:0:4136:e378:8000:63bf:5601:5601', // Teredo, client 169.254.169.254 (bit-inverted)
  '2001::80ff:fffe', // Teredo, client 127.0.0.1, server 0.0.0.0
  '2001:0:a9fe:a9fe::', // Teredo, server 169.254.169.254
  '::a9fe:a9fe', // IPv4-compatible
  '::169.254.169.254',
  '0:0:0:0:0:0:7f00:1',
  '::ffff:0:a9fe:a9fe', // IPv4-translated (RFC 6145)
  '::ffff:0:127.0.0.1',
  '0:0:0:0:0:ffff:a9fe:a9fe', // IPv4-mapped, uncompressed
  '0:0:0:0:0:FFFF:7F00:0001',
  '::FFFF:A9FE:A9FE',
  '::1:a9fe:a9fe', // reserved (::/8), not global unicast
  '4000::1', // outside 2000::/3: not allocated
  '5f00::1', // SRv6 SIDs
  '2001:2::1', // benchmarking
  '2001:db8::a9fe:a9fe', // documentation
  '3fff::1', // documentation (RFC 9637)
  'fe80::1%eth0',
] as const

describe('isPublicAddress (ipaddr.js ranges)', () => {
  test('IPv6 spellings that hide a private, link-local or loopback IPv4 address, and non-unicast IPv6 ranges, are refused', () => {
    const answers = HIDDEN_PRIVATE_IPV6.map((address) => [address, isPublicAddress(address)])
    expect(answers).toEqual(HIDDEN_PRIVATE_IPV6.map((address) => [address, false]))
  })

  test('public addresses pass in every spelling, including the IPv6 forms that carry a public IPv4 address', () => {
    const table = [
      '8.8.8.8',
      '2606:4700::1111',
      '2606:4700:0:0:0:0:0:1111',
      '2001:4860:4860::8888',
      '::ffff:8.8.8.8',
      '0:0:0:0:0:ffff:808:808',
      '::ffff:0:808:808',
      '64:ff9b::808:808',
      '64:ff9b:0:0:0:0:8.8.8.8',
      '2002:808:808::1',
      '2001:0:4136:e378:8000:63bf:f7f7:f7f7', // Teredo, server 65.54.227.120, client 8.8.8.8
    ]
    expect(table.map((address) => [address, isPublicAddress(address)])).toEqual(table.map((address) => [address, true]))
  })

  test('IPv4 spellings other than four decimal parts are not addresses here (the URL parser has already normalised them)', () => {
    for (const address of ['0177.0.0.1', '0x7f.0.0.1', '2130706433', '127.1', '1.2.3', '08.8.8.8', ' 8.8.8.8', '8.8.8.8 '])
      expect(`${address} ${isPublicAddress(address)}`).toBe(`${address} false`)
  })
})

describe('targets refused without allowPrivateTargets', () => {
  let strict: TestService
  let key: string

  beforeAll(async () => {
    strict = await startTestService({ config: { webhooks: { workers: false } } })
    const organization = await strict.createOrganization()
    const admin = await strict.createUser(organization, 'administrator')
    key = (await strict.createKey(admin.id, ['webhooks:read', 'webhooks:write'])).secret
  })
  afterAll(() => strict?.stop())

  const hostile = HIDDEN_PRIVATE_IPV6.filter((address) => !address.includes('%')).map((address) => `http://[${address}]/hook`)

  test('POST with any of the IPv6 spellings is 400 on url, and nothing is stored', async () => {
    for (const url of hostile) {
      const response = await strict.request('POST', '/api/v1/webhooks', { key, body: { url, events: ['*'] } })
      expect(`${url} ${response.status} ${response.body.errors?.[0]?.field}`).toBe(`${url} 400 url`)
    }
    const [row] = await queryText<{ n: number }>(strict.service.core.db, 'select count(*)::int as n from webhooks', [])
    expect(row!.n).toBe(0)
  })

  test('PATCH of a public webhook to any of them is 400 on url, and the URL stays', async () => {
    const created = await strict.request('POST', '/api/v1/webhooks', { key, body: { url: 'http://[2606:4700::1111]/hook', events: ['relationship.deleted'] } })
    expect(created.status).toBe(201)
    for (const url of hostile) {
      const response = await strict.request('PATCH', `/api/v1/webhooks/${created.body.data.id}`, { key, body: { url } })
      expect(`${url} ${response.status} ${response.body.errors?.[0]?.field}`).toBe(`${url} 400 url`)
    }
    const read = await strict.request('GET', `/api/v1/webhooks/${created.body.data.id}`, { key })
    expect(read.body.data.url).toBe('http://[2606:4700::1111]/hook')
  })
})
