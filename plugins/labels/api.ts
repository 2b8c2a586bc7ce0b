/**
 * The `labels` plugin's public face: the SQL column a work item's labels are read by (the
 * extension's `column`), for statements run elsewhere (the export benchmark's ceiling).
 */
export { labelsColumn } from './service'
