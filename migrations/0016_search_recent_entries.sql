DROP INDEX "entries_project_idx";--> statement-breakpoint
CREATE INDEX "entries_project_created_idx" ON "entries" USING btree ("project_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);