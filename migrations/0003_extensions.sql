-- Trigram indexes back the substring fallback of project search (pg_trgm ships with PostgreSQL's
-- contrib package and is loaded into PGlite by src/db.ts).
CREATE EXTENSION IF NOT EXISTS pg_trgm;
