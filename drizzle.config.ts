import { defineConfig } from 'drizzle-kit'

/** One linear migration history for the core and every plugin (`npm run db:generate`). */
export default defineConfig({
  dialect: 'postgresql',
  schema: ['./src/schema.ts', './plugins/*/schema.ts'],
  out: './migrations',
  casing: 'snake_case',
})
