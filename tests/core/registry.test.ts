/**
 * A plugin's context hands out only the services of the plugins it declared as dependencies (or
 * optional dependencies, through `find`), and provides only its own refs: anything else is a
 * start-up refusal naming the missing declaration, before anything is served.
 */
import { describe, expect, test } from 'bun:test'
import { registry } from '../../plugins'
import { ProjectAccessRef } from '../../plugins/projects/api'
import { DisplayAccountsRef } from '../../plugins/display/api'
import { StartupError } from '../../src/startup-error'
import { definePlugin } from '../../src/plugin'
import { ServiceRegistry } from '../../src/services/registry'
import { startTestService } from '../helpers/service'

const refusalOf = async (plugin: ReturnType<typeof definePlugin>) => {
  const error = await startTestService({ registry: [...registry, plugin] }).then(
    async (api) => {
      await api.stop()
      return null
    },
    (failure: unknown) => failure,
  )
  expect(error).toBeInstanceOf(StartupError)
  return (error as Error).message
}

describe('service refs are scoped by declared dependencies', () => {
  test("using a plugin's service without declaring it is refused at start-up, naming both", async () => {
    const undeclared = definePlugin({ name: 'probe-undeclared', description: 'test', dependencies: ['auth'], setup: ({ services }) => void services.get(ProjectAccessRef) })
    expect(await refusalOf(undeclared)).toBe('plugin "probe-undeclared" uses "projects.access" of plugin "projects", which is not among its dependencies')
  })

  test("providing another plugin's ref is refused", async () => {
    const impostor = definePlugin({ name: 'probe-impostor', description: 'test', setup: ({ services }) => services.provide(DisplayAccountsRef, {} as never) })
    expect(await refusalOf(impostor)).toBe('plugin "probe-impostor" provides "display.accounts", a ref of plugin "display"')
  })

  test('an optional dependency is found when enabled, undefined when disabled, and set up first', async () => {
    let found: unknown = 'not looked up'
    const optional = definePlugin({
      name: 'probe-optional',
      description: 'test',
      optionalDependencies: ['display'],
      setup: ({ services }) => void (found = services.find(DisplayAccountsRef)),
    })
    // Registered before display, yet display is set up first.
    const enabled = await startTestService({ registry: [optional, ...registry] })
    expect(found).toBeDefined()
    await enabled.stop()
    const disabled = await startTestService({ registry: [optional, ...registry], config: { plugins: { disabled: ['alerts', 'push', 'work-dashboards', 'display'] } } })
    expect(found).toBeUndefined()
    await disabled.stop()
  })

  test('a declared dependency is handed out', () => {
    const services = new ServiceRegistry()
    const access = {} as never
    services.provide(ProjectAccessRef, access)
    expect(services.scopedTo({ name: 'audit-log', dependencies: ['auth', 'projects'] }).get(ProjectAccessRef)).toBe(access)
    expect(() => services.scopedTo({ name: 'teams', dependencies: ['auth'] }).find(ProjectAccessRef)).toThrow(StartupError)
  })
})
