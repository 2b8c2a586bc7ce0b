CREATE TABLE "component_sources" (
	"component_id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"page_id" uuid NOT NULL,
	"project_id" uuid NOT NULL,
	"view_id" uuid,
	"measure" text NOT NULL,
	"range_days" integer,
	"bound_by" uuid NOT NULL,
	"state" text DEFAULT 'active' NOT NULL,
	"reason" text,
	"computed_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "component_sources_pkey" PRIMARY KEY("component_id","organization_id"),
	CONSTRAINT "component_sources_state_check" CHECK ("component_sources"."state" in ('active', 'suspended')),
	CONSTRAINT "component_sources_range_check" CHECK ("component_sources"."range_days" is null or "component_sources"."range_days" between 1 and 365)
);
--> statement-breakpoint
CREATE TABLE "work_source_marks" (
	"id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"project_id" uuid NOT NULL,
	"marked_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "work_source_marks_pkey" PRIMARY KEY("id","organization_id")
);
--> statement-breakpoint
DROP VIEW "public"."work_item_documents";--> statement-breakpoint
ALTER TABLE "components" ADD COLUMN "feed" text;--> statement-breakpoint
ALTER TABLE "components" ADD COLUMN "feed_label" text;--> statement-breakpoint
ALTER TABLE "work_items" ADD COLUMN "started_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "work_items" ADD COLUMN "closed_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "component_sources" ADD CONSTRAINT "component_sources_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "component_sources" ADD CONSTRAINT "component_sources_component_fk" FOREIGN KEY ("component_id","organization_id") REFERENCES "public"."components"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "component_sources" ADD CONSTRAINT "component_sources_project_fk" FOREIGN KEY ("project_id","organization_id") REFERENCES "public"."projects"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "component_sources" ADD CONSTRAINT "component_sources_bound_by_fk" FOREIGN KEY ("bound_by","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_source_marks" ADD CONSTRAINT "work_source_marks_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "component_sources_project_idx" ON "component_sources" USING btree ("organization_id","project_id") WHERE "component_sources"."state" = 'active';--> statement-breakpoint
CREATE INDEX "work_source_marks_organization_idx" ON "work_source_marks" USING btree ("organization_id","marked_at");--> statement-breakpoint
CREATE VIEW "public"."work_item_documents" AS (select id, organization_id, project_id, number, title, description, status, priority, assignee_id, due_date, position, created_by, created_at, updated_at, search_vector, started_at, closed_at from work_items);--> statement-breakpoint
UPDATE "work_items" SET "closed_at" = "updated_at" WHERE "status" in ('done', 'cancelled');--> statement-breakpoint
UPDATE "work_items" SET "started_at" = "updated_at" WHERE "status" = 'in_progress';
