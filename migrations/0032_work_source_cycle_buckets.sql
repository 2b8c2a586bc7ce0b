DROP INDEX "work_source_items_done_idx";--> statement-breakpoint
ALTER TABLE "work_source_items" DROP COLUMN "done_at";--> statement-breakpoint
ALTER TABLE "work_source_items" DROP COLUMN "cycle_days";--> statement-breakpoint
-- Cycle time now counts its items by day and cycle (`y:` buckets): its sources are built again at their next recomputation.
UPDATE "component_sources" SET "built" = false WHERE "measure" = 'cycleTimeDays';
