/**
 * What other plugins add to the live pages (LivePageExtensions): scripts on a signed-in view, and
 * marks on components (an alert firing) on every view. A page's marks are read when the page is
 * drawn, beside its cells, and again after a plugin says they changed: its viewers on every
 * instance get a `marks` event (live-streams.ts) that replaces them. A page whose marks cannot be
 * read is drawn without them (logged): a mark never costs a viewer the dashboard.
 */
import { notify, type Transaction } from '../../../src/db'
import { html } from '../../../src/http/html'
import { describeError, type Logger } from '../../../src/log'
import type { ComponentMark, LivePageExtensions } from '../api'
import { DISPLAY_CHANNEL } from '../pages/channels'

export type MarkSource = (organizationId: string, pageId: string) => Promise<ComponentMark[]>

/** A component's marks as the page shows them: one list, placed after the cell's title. */
export function marksHtml(marks: readonly ComponentMark[]): string {
  return html`<ul class="marks" data-marks>${marks.map((mark) => html`<li class="mark" data-tone="${mark.tone}"${mark.detail ? html` title="${mark.detail}"` : ''}>${mark.text}</li>`)}</ul>`.value
}

export class LiveExtensions implements LivePageExtensions {
  private readonly scriptList: string[] = []
  private readonly sources: MarkSource[] = []

  constructor(private readonly log: Logger) {}

  addScript(src: string): void {
    this.scriptList.push(src)
  }

  addMarks(read: MarkSource): void {
    this.sources.push(read)
  }

  async marksChanged(tx: Transaction, pageId: string): Promise<void> {
    await notify(tx, DISPLAY_CHANNEL, JSON.stringify([{ pageId, marks: true }]))
  }

  get scripts(): readonly string[] {
    return this.scriptList
  }

  /** The page's marks as each marked component shows them (markup by component id): no statement when no plugin marks. */
  async marks(organizationId: string, pageId: string): Promise<Map<string, string>> {
    if (!this.sources.length) return new Map()
    const byComponent = new Map<string, ComponentMark[]>()
    const read = await Promise.all(
      this.sources.map((source) =>
        source(organizationId, pageId).catch((error) => {
          this.log.warn('could not read the marks of a live page', { pageId, ...describeError(error) })
          return []
        }),
      ),
    )
    for (const mark of read.flat()) byComponent.set(mark.componentId, [...(byComponent.get(mark.componentId) ?? []), mark])
    return new Map([...byComponent].map(([componentId, marks]) => [componentId, marksHtml(marks)]))
  }
}
