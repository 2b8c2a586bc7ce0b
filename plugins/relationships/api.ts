/**
 * The `relationships` plugin's public face: the relationship model, its columns as a fragment and
 * its mapping, for plugins that read relationships through the `relationship_links` read model
 * (aliased `r`).
 */
export { Relationship, RELATIONSHIP_COLUMNS, toRelationship, type RelationshipResource, type RelationshipTextRow } from './model'
