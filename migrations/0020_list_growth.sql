CREATE TABLE "audit_log_counts" (
	"scope_id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"records" integer NOT NULL,
	CONSTRAINT "audit_log_counts_pkey" PRIMARY KEY("scope_id","organization_id")
);
--> statement-breakpoint
CREATE TABLE "entry_counts" (
	"work_item_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"organization_id" uuid NOT NULL,
	"items" integer NOT NULL,
	CONSTRAINT "entry_counts_pkey" PRIMARY KEY("work_item_id","kind","organization_id")
);
--> statement-breakpoint
CREATE TABLE "relationship_counts" (
	"project_id" uuid NOT NULL,
	"type" text NOT NULL,
	"organization_id" uuid NOT NULL,
	"items" integer NOT NULL,
	CONSTRAINT "relationship_counts_pkey" PRIMARY KEY("project_id","type","organization_id")
);
--> statement-breakpoint
CREATE TABLE "work_item_counts" (
	"project_id" uuid NOT NULL,
	"status" text NOT NULL,
	"organization_id" uuid NOT NULL,
	"items" integer NOT NULL,
	CONSTRAINT "work_item_counts_pkey" PRIMARY KEY("project_id","status","organization_id")
);
--> statement-breakpoint
DROP INDEX "work_items_project_assignee_idx";--> statement-breakpoint
ALTER TABLE "entry_counts" ADD CONSTRAINT "entry_counts_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "entry_counts" ADD CONSTRAINT "entry_counts_work_item_fk" FOREIGN KEY ("work_item_id","organization_id") REFERENCES "public"."work_items"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "relationship_counts" ADD CONSTRAINT "relationship_counts_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "relationship_counts" ADD CONSTRAINT "relationship_counts_project_fk" FOREIGN KEY ("project_id","organization_id") REFERENCES "public"."projects"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_item_counts" ADD CONSTRAINT "work_item_counts_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_item_counts" ADD CONSTRAINT "work_item_counts_project_fk" FOREIGN KEY ("project_id","organization_id") REFERENCES "public"."projects"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "entries_work_item_kind_order_idx" ON "entries" USING btree ("work_item_id","kind","position","created_at","id");--> statement-breakpoint
CREATE INDEX "entries_work_item_author_order_idx" ON "entries" USING btree ("work_item_id","author_id","position","created_at","id");--> statement-breakpoint
CREATE INDEX "entries_work_item_created_idx" ON "entries" USING btree ("work_item_id","created_at","id");--> statement-breakpoint
CREATE INDEX "entries_work_item_updated_idx" ON "entries" USING btree ("work_item_id","updated_at","id");--> statement-breakpoint
CREATE INDEX "relationships_project_type_idx" ON "relationships" USING btree ("project_id","type","created_at","id");--> statement-breakpoint
CREATE INDEX "work_items_project_status_order_idx" ON "work_items" USING btree ("project_id","status","position","created_at","id");--> statement-breakpoint
CREATE INDEX "work_items_project_assignee_order_idx" ON "work_items" USING btree ("project_id","assignee_id","position","created_at","id");--> statement-breakpoint
CREATE INDEX "work_items_project_created_idx" ON "work_items" USING btree ("project_id","created_at","id");--> statement-breakpoint
CREATE INDEX "work_items_project_priority_idx" ON "work_items" USING btree ("project_id","priority","id");--> statement-breakpoint
CREATE INDEX "work_items_project_due_idx" ON "work_items" USING btree ("project_id","due_date","id");--> statement-breakpoint
CREATE VIEW "public"."relationship_type_counts" AS (select project_id, organization_id, type, items from relationship_counts);--> statement-breakpoint
CREATE VIEW "public"."work_item_status_counts" AS (select project_id, organization_id, status, items from work_item_counts);--> statement-breakpoint
INSERT INTO "work_item_counts" ("project_id", "status", "organization_id", "items") SELECT "project_id", "status", "organization_id", count(*) FROM "work_items" GROUP BY "project_id", "status", "organization_id";--> statement-breakpoint
INSERT INTO "entry_counts" ("work_item_id", "kind", "organization_id", "items") SELECT "work_item_id", "kind", "organization_id", count(*) FROM "entries" GROUP BY "work_item_id", "kind", "organization_id";--> statement-breakpoint
INSERT INTO "relationship_counts" ("project_id", "type", "organization_id", "items") SELECT "project_id", "type", "organization_id", count(*) FROM "relationships" GROUP BY "project_id", "type", "organization_id";
--> statement-breakpoint
INSERT INTO "audit_log_counts" ("scope_id", "organization_id", "records") SELECT coalesce("project_id", "organization_id"), "organization_id", count(*) FROM "audit_logs" GROUP BY coalesce("project_id", "organization_id"), "organization_id";
