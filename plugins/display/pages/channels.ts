/**
 * The NOTIFY channels on which a page's changes reach its live viewers on every instance: the
 * page management and the display API send on them, the live streams listen.
 */

/** Changes of a page's content: `[{pageId, componentId?, marks?}]` (a component's data or settings, the page's marks, or its name and title). */
export const DISPLAY_CHANNEL = 'display_updates'

/** Access changes of a page (`{pageId}`: an entry removed or lowered, a link revoked, or the page deleted); live streams re-check on it. */
export const PAGE_ACCESS_CHANNEL = 'display_page_access'
