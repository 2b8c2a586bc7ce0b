CREATE TABLE "work_source_counts" (
	"component_id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"bucket" text NOT NULL,
	"items" integer NOT NULL,
	CONSTRAINT "work_source_counts_pkey" PRIMARY KEY("component_id","bucket","organization_id")
);
--> statement-breakpoint
CREATE TABLE "work_source_items" (
	"component_id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"work_item_id" uuid NOT NULL,
	"buckets" text[] NOT NULL,
	"done_at" timestamp with time zone,
	"cycle_days" double precision,
	CONSTRAINT "work_source_items_pkey" PRIMARY KEY("component_id","work_item_id","organization_id")
);
--> statement-breakpoint
ALTER TABLE "component_sources" ADD COLUMN "built" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "component_sources" ADD COLUMN "view_version" text;--> statement-breakpoint
ALTER TABLE "work_source_marks" ADD COLUMN "work_item_id" uuid;--> statement-breakpoint
ALTER TABLE "work_source_counts" ADD CONSTRAINT "work_source_counts_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_source_counts" ADD CONSTRAINT "work_source_counts_source_fk" FOREIGN KEY ("component_id","organization_id") REFERENCES "public"."component_sources"("component_id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_source_items" ADD CONSTRAINT "work_source_items_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_source_items" ADD CONSTRAINT "work_source_items_source_fk" FOREIGN KEY ("component_id","organization_id") REFERENCES "public"."component_sources"("component_id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "work_source_items_done_idx" ON "work_source_items" USING btree ("organization_id","component_id","done_at") WHERE "work_source_items"."done_at" is not null;--> statement-breakpoint
CREATE VIEW "public"."label_directory" AS (select id, organization_id, name, color from labels);