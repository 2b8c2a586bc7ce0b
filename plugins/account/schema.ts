/** Failed sign-ins per account and per address, counted in fixed windows (shared by every instance). */
import { integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core'

export const signInThrottle = pgTable('sign_in_throttle', {
  /** `email:<address>` or `ip:<address>`. */
  key: text().primaryKey(),
  windowStart: timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  failures: integer().notNull(),
})
