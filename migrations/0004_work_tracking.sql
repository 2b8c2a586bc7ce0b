CREATE TABLE "entries" (
	"id" uuid PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"project_id" uuid NOT NULL,
	"work_item_id" uuid NOT NULL,
	"kind" text DEFAULT 'comment' NOT NULL,
	"body" text NOT NULL,
	"author_id" uuid,
	"position" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"search_vector" "tsvector" GENERATED ALWAYS AS (setweight(to_tsvector('simple', body), 'B')) STORED,
	CONSTRAINT "entries_kind_check" CHECK ("entries"."kind" in ('comment', 'note', 'log'))
);
--> statement-breakpoint
CREATE TABLE "relationships" (
	"id" uuid PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"project_id" uuid NOT NULL,
	"source_work_item_id" uuid NOT NULL,
	"target_work_item_id" uuid NOT NULL,
	"type" text NOT NULL,
	"created_by" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "relationships_no_self_link" CHECK ("relationships"."source_work_item_id" <> "relationships"."target_work_item_id"),
	CONSTRAINT "relationships_type_check" CHECK ("relationships"."type" in ('blocks', 'relates_to', 'duplicates', 'parent_of'))
);
--> statement-breakpoint
CREATE TABLE "work_item_counters" (
	"project_id" uuid PRIMARY KEY NOT NULL,
	"last_number" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "work_items" (
	"id" uuid PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"project_id" uuid NOT NULL,
	"number" integer NOT NULL,
	"title" text NOT NULL,
	"description" text,
	"status" text DEFAULT 'todo' NOT NULL,
	"priority" integer DEFAULT 0 NOT NULL,
	"assignee_id" uuid,
	"due_date" date,
	"position" integer NOT NULL,
	"created_by" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"search_vector" "tsvector" GENERATED ALWAYS AS (setweight(to_tsvector('simple', coalesce(title, '')), 'A') || setweight(to_tsvector('simple', coalesce(description, '')), 'B')) STORED,
	CONSTRAINT "work_items_status_check" CHECK ("work_items"."status" in ('todo', 'in_progress', 'done', 'cancelled')),
	CONSTRAINT "work_items_priority_check" CHECK ("work_items"."priority" between 0 and 4)
);
--> statement-breakpoint
ALTER TABLE "entries" ADD CONSTRAINT "entries_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "entries" ADD CONSTRAINT "entries_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "entries" ADD CONSTRAINT "entries_work_item_id_work_items_id_fk" FOREIGN KEY ("work_item_id") REFERENCES "public"."work_items"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "entries" ADD CONSTRAINT "entries_author_id_users_id_fk" FOREIGN KEY ("author_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "relationships" ADD CONSTRAINT "relationships_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "relationships" ADD CONSTRAINT "relationships_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "relationships" ADD CONSTRAINT "relationships_source_work_item_id_work_items_id_fk" FOREIGN KEY ("source_work_item_id") REFERENCES "public"."work_items"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "relationships" ADD CONSTRAINT "relationships_target_work_item_id_work_items_id_fk" FOREIGN KEY ("target_work_item_id") REFERENCES "public"."work_items"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "relationships" ADD CONSTRAINT "relationships_created_by_users_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_item_counters" ADD CONSTRAINT "work_item_counters_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_items" ADD CONSTRAINT "work_items_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_items" ADD CONSTRAINT "work_items_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_items" ADD CONSTRAINT "work_items_assignee_id_users_id_fk" FOREIGN KEY ("assignee_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_items" ADD CONSTRAINT "work_items_created_by_users_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "entries_work_item_order_idx" ON "entries" USING btree ("work_item_id","position","created_at","id");--> statement-breakpoint
CREATE INDEX "entries_project_idx" ON "entries" USING btree ("project_id");--> statement-breakpoint
CREATE INDEX "entries_search_idx" ON "entries" USING gin ("search_vector");--> statement-breakpoint
CREATE INDEX "entries_body_trgm_idx" ON "entries" USING gin ("body" gin_trgm_ops);--> statement-breakpoint
CREATE UNIQUE INDEX "relationships_link_unique" ON "relationships" USING btree ("source_work_item_id","target_work_item_id","type");--> statement-breakpoint
CREATE UNIQUE INDEX "relationships_relates_to_unique" ON "relationships" USING btree (least("source_work_item_id", "target_work_item_id"),greatest("source_work_item_id", "target_work_item_id")) WHERE "relationships"."type" = 'relates_to';--> statement-breakpoint
CREATE INDEX "relationships_project_idx" ON "relationships" USING btree ("project_id","created_at","id");--> statement-breakpoint
CREATE INDEX "relationships_target_idx" ON "relationships" USING btree ("target_work_item_id");--> statement-breakpoint
CREATE UNIQUE INDEX "work_items_project_number_unique" ON "work_items" USING btree ("project_id","number");--> statement-breakpoint
CREATE INDEX "work_items_project_order_idx" ON "work_items" USING btree ("project_id","position","created_at","id");--> statement-breakpoint
CREATE INDEX "work_items_project_assignee_idx" ON "work_items" USING btree ("project_id","assignee_id");--> statement-breakpoint
CREATE INDEX "work_items_search_idx" ON "work_items" USING gin ("search_vector");--> statement-breakpoint
CREATE INDEX "work_items_title_trgm_idx" ON "work_items" USING gin ("title" gin_trgm_ops);