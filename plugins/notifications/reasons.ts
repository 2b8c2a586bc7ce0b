/**
 * Why a thread tells its user something. A thread keeps every reason since it was last read, as
 * bits of one number (merged with `|` in SQL, so an update never grows a row); the strongest is
 * its `reason`: assigned > mentioned > status_changed > commented > created.
 */
export const REASONS = ['assigned', 'mentioned', 'status_changed', 'commented', 'created'] as const
export type Reason = (typeof REASONS)[number]

/** Each reason's bit: the stronger, the higher. */
export const REASON_BIT: Readonly<Record<Reason, number>> = { assigned: 16, mentioned: 8, status_changed: 4, commented: 2, created: 1 }

/** The reasons of `bits`, strongest first. */
export const reasonsOf = (bits: number): Reason[] => REASONS.filter((reason) => (bits & REASON_BIT[reason]) !== 0)

/** The strongest reason of `bits` (a thread always has one). */
export const strongest = (bits: number): Reason => reasonsOf(bits)[0] ?? 'created'
