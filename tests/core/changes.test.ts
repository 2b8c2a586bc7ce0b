/**
 * The change feed (src/changes.ts): a recorded change reaches the observers that want it, in the
 * change's transaction; a type no enabled plugin declares is a bug, refused; an observer that does
 * not want an event costs no read of its data.
 */
import { describe, expect, test } from 'bun:test'
import type { AuditActor } from '../../src/audit'
import { createChangeFeed, crudEvents, type ChangeEvent } from '../../src/changes'
import type { Transaction } from '../../src/db'

const actor: AuditActor = { organizationId: 'org-1', userId: 'user-1', apiKeyId: null, via: 'rest', requestId: null }
const tx = { marker: 'the transaction' } as unknown as Transaction

describe('the change feed', () => {
  test('an observer gets the change in the same transaction, with the organization, project, actor and data', async () => {
    const feed = createChangeFeed(crudEvents('thing', 'A thing'))
    const seen: Array<{ tx: Transaction; event: ChangeEvent; data: unknown }> = []
    feed.observe({ wants: () => true, observe: async (on, event) => void seen.push({ tx: on, event, data: await event.data() }) })
    await feed.record(tx, actor, { type: 'thing.created', projectId: 'project-1', data: { id: 't1' } })
    expect(seen).toHaveLength(1)
    expect(seen[0]!.tx).toBe(tx)
    expect(seen[0]!.event).toMatchObject({ type: 'thing.created', organizationId: 'org-1', projectId: 'project-1', actor: { userId: 'user-1', via: 'rest' } })
    expect(seen[0]!.data).toEqual({ id: 't1' })
  })

  test('a type no enabled plugin declares is refused, with or without observers', async () => {
    const feed = createChangeFeed(crudEvents('thing', 'A thing'))
    await expect(feed.record(tx, actor, { type: 'thing.renamed', projectId: null, data: {} })).rejects.toThrow('not declared')
    feed.observe({ wants: () => true, observe: async () => {} })
    await expect(feed.record(tx, actor, { type: 'other.created', projectId: null, data: {} })).rejects.toThrow('not declared')
  })

  test('data given as a function is read only when an observer wants the event, and once however many read it', async () => {
    const feed = createChangeFeed([{ name: 'order.updated', description: 'x' }])
    let reads = 0
    const data = async () => ({ read: ++reads })
    const wanting = { organization: 'org-2' }
    const got: unknown[] = []
    feed.observe({ wants: (organizationId) => organizationId === wanting.organization, observe: async (_tx, event) => void got.push(await event.data(), await event.data()) })
    feed.observe({ wants: (organizationId) => organizationId === wanting.organization, observe: async (_tx, event) => void got.push(await event.data()) })
    await feed.record(tx, actor, { type: 'order.updated', projectId: 'p', data })
    expect(reads).toBe(0)
    await feed.record(tx, { ...actor, organizationId: 'org-2' }, { type: 'order.updated', projectId: 'p', data })
    expect(reads).toBe(1)
    expect(got).toEqual([{ read: 1 }, { read: 1 }, { read: 1 }])
  })

  test('a removed observer is not called; an observer that throws fails the change (its transaction rolls back)', async () => {
    const feed = createChangeFeed(crudEvents('thing', 'A thing'))
    let calls = 0
    const remove = feed.observe({ wants: () => true, observe: async () => void calls++ })
    remove()
    await feed.record(tx, actor, { type: 'thing.deleted', projectId: null, data: {} })
    expect(calls).toBe(0)
    feed.observe({ wants: () => true, observe: async () => { throw new Error('outbox write failed') } })
    await expect(feed.record(tx, actor, { type: 'thing.deleted', projectId: null, data: {} })).rejects.toThrow('outbox write failed')
  })
})
