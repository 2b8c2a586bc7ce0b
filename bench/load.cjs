// autocannon with a rotating set of request bodies (the CLI takes only one), run by Node so the
// load generator is not the runtime under test. Usage: node bench/load.cjs <config.json>
// config: { url, method, headers, bodies: [string], connections, duration }
const autocannon = require('autocannon')
const config = JSON.parse(require('node:fs').readFileSync(process.argv[2], 'utf8'))
autocannon(
  {
    url: config.url,
    connections: config.connections,
    duration: config.duration,
    requests: config.bodies.map((body) => ({ method: config.method, headers: config.headers, body })),
  },
  (error, result) => {
    if (error) throw error
    process.stdout.write(JSON.stringify(result))
  },
)
