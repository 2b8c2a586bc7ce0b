/** The ceiling for HTTP overhead: an Elysia hello-world served exactly like the service. */
import { Elysia } from 'elysia'

const app = new Elysia().get('/', () => 'hello')
app.compile()
Bun.serve({ port: Number(process.env.PORT ?? 3999), fetch: app.fetch })
