CREATE TABLE "work_source_purges" (
	"component_id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"requested_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "work_source_purges_pkey" PRIMARY KEY("component_id","organization_id")
);
--> statement-breakpoint
ALTER TABLE "work_source_items" DROP CONSTRAINT "work_source_items_source_fk";
--> statement-breakpoint
ALTER TABLE "work_source_purges" ADD CONSTRAINT "work_source_purges_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- No statistics on component_id: a source built since the last ANALYZE is not in its most common values, and the planner would estimate one row for it and read every row of the source to find the changed ones; without them it assumes a share of the table and looks the changed items up by their key.
ALTER TABLE "work_source_items" ALTER COLUMN "component_id" SET STATISTICS 0;
