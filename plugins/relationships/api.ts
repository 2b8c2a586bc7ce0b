/**
 * The `relationships` plugin's public face: the relationship model and its SQL-text columns, for
 * plugins that read relationships through the `relationship_links` read model (aliased `r`).
 */
export { fromRelationshipText, Relationship, RELATIONSHIP_COLUMNS, type RelationshipResource, type RelationshipTextRow } from './model'
