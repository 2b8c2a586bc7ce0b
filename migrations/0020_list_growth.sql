CREATE TABLE "work_item_counts" (
	"project_id" uuid NOT NULL,
	"status" text NOT NULL,
	"organization_id" uuid NOT NULL,
	"items" integer NOT NULL,
	CONSTRAINT "work_item_counts_pkey" PRIMARY KEY("project_id","status","organization_id")
);
--> statement-breakpoint
DROP INDEX "work_items_project_assignee_idx";--> statement-breakpoint
ALTER TABLE "work_item_counts" ADD CONSTRAINT "work_item_counts_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_item_counts" ADD CONSTRAINT "work_item_counts_project_fk" FOREIGN KEY ("project_id","organization_id") REFERENCES "public"."projects"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "work_items_project_status_order_idx" ON "work_items" USING btree ("project_id","status","position","created_at","id");--> statement-breakpoint
CREATE INDEX "work_items_project_assignee_order_idx" ON "work_items" USING btree ("project_id","assignee_id","position","created_at","id");--> statement-breakpoint
CREATE INDEX "work_items_project_created_idx" ON "work_items" USING btree ("project_id","created_at","id");--> statement-breakpoint
CREATE INDEX "work_items_project_priority_idx" ON "work_items" USING btree ("project_id","priority","id");--> statement-breakpoint
CREATE INDEX "work_items_project_due_idx" ON "work_items" USING btree ("project_id","due_date","id");--> statement-breakpoint
INSERT INTO "work_item_counts" ("project_id", "status", "organization_id", "items") SELECT "project_id", "status", "organization_id", count(*) FROM "work_items" GROUP BY "project_id", "status", "organization_id";
