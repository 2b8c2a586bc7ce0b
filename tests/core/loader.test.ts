import { describe, expect, test } from 'bun:test'
import { Type } from '@sinclair/typebox'
import { loadConfig } from '../../src/config'
import { resolvePlugins } from '../../src/loader'
import { StartupError } from '../../src/startup-error'
import { definePlugin } from '../../src/plugin'

const plugin = (name: string, dependencies: string[] = [], config?: any) =>
  definePlugin({ name, description: name, dependencies, ...(config ? { config } : {}) })

const registry = [
  plugin('auth', [], Type.Object({ ttl: Type.Integer({ minimum: 0, default: 30 }), mode: Type.String({ default: 'fast' }) })),
  plugin('projects', ['auth']),
  plugin('work-items', ['projects', 'auth']),
  plugin('docs'),
]

const refusal = (fn: () => unknown) => {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(StartupError)
    return (error as Error).message
  }
  throw new Error('expected a start-up refusal')
}

describe('plugin resolution', () => {
  test('orders plugins after their dependencies', () => {
    const order = resolvePlugins([registry[2]!, registry[3]!, registry[1]!, registry[0]!], new Set(['work-items', 'projects', 'auth', 'docs']))
    expect(order.map((p) => p.name)).toEqual(['auth', 'projects', 'work-items', 'docs'])
  })

  test('a missing dependency is refused naming both plugins', () => {
    expect(refusal(() => resolvePlugins(registry, new Set(['auth', 'work-items'])))).toBe('work-items needs projects, which is disabled')
  })

  test('a cycle is refused with its path', () => {
    const cyclic = [plugin('a', ['b']), plugin('b', ['c']), plugin('c', ['a'])]
    expect(refusal(() => resolvePlugins(cyclic, new Set(['a', 'b', 'c'])))).toBe('plugin dependency cycle: a -> b -> c -> a')
  })

  test('a dependency on a plugin that does not exist is refused', () => {
    expect(refusal(() => resolvePlugins([plugin('a', ['ghost'])], new Set(['a'])))).toContain('depends on "ghost", which is not a known plugin')
  })

  test('a plugin registered twice is refused', () => {
    expect(refusal(() => resolvePlugins([plugin('a'), plugin('a')], new Set(['a'])))).toBe('plugin "a" is registered twice')
  })
})

describe('configuration', () => {
  test('defaults fill every plugin section and every plugin is enabled', () => {
    const config = loadConfig(registry, { raw: {}, env: {} })
    expect([...config.enabled].sort()).toEqual(['auth', 'docs', 'projects', 'work-items'])
    expect(config.pluginConfigs.get('auth')).toEqual({ ttl: 30, mode: 'fast' })
    expect(config.server).toEqual({ port: 3000, host: '0.0.0.0', trustProxy: false, listCacheBytes: 64 * 1024 * 1024, listPagesBuiltBy: 'database', reusePort: false, accessLog: true, exportIdleSeconds: 30, cors: { origins: [] } })
  })

  test('SERVICE_CONFIG: a named file must exist, empty means no file, unset reads ./service.config.json only if present', () => {
    expect(() => loadConfig(registry, { env: { SERVICE_CONFIG: '/no/such/file.json' } })).toThrow('SERVICE_CONFIG names /no/such/file.json, which does not exist')
    expect(loadConfig(registry, { env: { SERVICE_CONFIG: '' } }).server.port).toBe(3000)
  })

  test('values from the file override defaults', () => {
    const config = loadConfig(registry, { raw: { auth: { ttl: 5 } }, env: {} })
    expect(config.pluginConfigs.get('auth')).toEqual({ ttl: 5, mode: 'fast' })
  })

  test('PLUGINS_ENABLED replaces the list and PLUGINS_DISABLED removes from it', () => {
    const config = loadConfig(registry, {
      raw: { plugins: { enabled: ['auth'] } },
      env: { PLUGINS_ENABLED: 'auth, projects,docs', PLUGINS_DISABLED: 'docs' },
    })
    expect([...config.enabled].sort()).toEqual(['auth', 'projects'])
  })

  test('an unknown plugin name is refused, wherever it appears', () => {
    expect(refusal(() => loadConfig(registry, { raw: {}, env: { PLUGINS_ENABLED: 'auth,serch' } }))).toStartWith('unknown plugin "serch"')
    expect(refusal(() => loadConfig(registry, { raw: { plugins: { disabled: ['nope'] } }, env: {} }))).toStartWith('unknown plugin "nope"')
    expect(refusal(() => loadConfig(registry, { raw: { serch: {} }, env: {} }))).toStartWith('unknown plugin "serch"')
  })

  test('a bad value is refused naming the setting and the value', () => {
    expect(refusal(() => loadConfig(registry, { raw: { auth: { ttl: -1 } }, env: {} }))).toBe(
      'config auth.ttl: must be an integer of at least 0 (got -1)',
    )
    expect(refusal(() => loadConfig(registry, { raw: { auth: { ttl: 'soon' } }, env: {} }))).toBe('config auth.ttl: must be an integer of at least 0 (got "soon")')
    expect(refusal(() => loadConfig(registry, { raw: { auth: { tll: 3 } }, env: {} }))).toBe('config auth.tll: unknown setting')
    expect(refusal(() => loadConfig(registry, { raw: { server: { port: 70000 } }, env: {} }))).toStartWith('config server.port:')
    expect(refusal(() => loadConfig(registry, { raw: {}, env: { PORT: 'eighty' } }))).toBe('PORT: must be an integer 0..65535 (got "eighty")')
  })

  test('a config file that is not JSON is refused', async () => {
    const file = `/tmp/worktrack-bad-config-${process.pid}.json`
    await Bun.write(file, '{ nope')
    expect(refusal(() => loadConfig(registry, { file, env: {} }))).toStartWith(`${file} is not valid JSON`)
  })
})
