CREATE TABLE "custom_fields" (
	"id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"key" text NOT NULL,
	"name" text NOT NULL,
	"type" text NOT NULL,
	"options" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"required" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "custom_fields_pkey" PRIMARY KEY("id","organization_id")
);
--> statement-breakpoint
CREATE TABLE "project_custom_fields" (
	"project_id" uuid NOT NULL,
	"field_id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "project_custom_fields_pkey" PRIMARY KEY("project_id","field_id","organization_id")
);
--> statement-breakpoint
CREATE TABLE "work_item_field_values" (
	"work_item_id" uuid NOT NULL,
	"field_id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"project_id" uuid NOT NULL,
	"field_key" text NOT NULL,
	"value" jsonb NOT NULL,
	"number_value" numeric,
	"date_value" date,
	"text_value" text,
	"user_id" uuid,
	"option_ids" uuid[],
	CONSTRAINT "work_item_field_values_pkey" PRIMARY KEY("work_item_id","field_id","organization_id")
);
--> statement-breakpoint
CREATE TABLE "labels" (
	"id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"name" text NOT NULL,
	"color" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "labels_pkey" PRIMARY KEY("id","organization_id")
);
--> statement-breakpoint
CREATE TABLE "work_item_labels" (
	"work_item_id" uuid NOT NULL,
	"label_id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"project_id" uuid NOT NULL,
	CONSTRAINT "work_item_labels_pkey" PRIMARY KEY("work_item_id","label_id","organization_id")
);
--> statement-breakpoint
ALTER TABLE "webhook_events" ADD COLUMN "previous" json;--> statement-breakpoint
ALTER TABLE "custom_fields" ADD CONSTRAINT "custom_fields_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "project_custom_fields" ADD CONSTRAINT "project_custom_fields_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "project_custom_fields" ADD CONSTRAINT "project_custom_fields_project_fk" FOREIGN KEY ("project_id","organization_id") REFERENCES "public"."projects"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "project_custom_fields" ADD CONSTRAINT "project_custom_fields_field_fk" FOREIGN KEY ("field_id","organization_id") REFERENCES "public"."custom_fields"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_item_field_values" ADD CONSTRAINT "work_item_field_values_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_item_field_values" ADD CONSTRAINT "work_item_field_values_work_item_fk" FOREIGN KEY ("work_item_id","organization_id") REFERENCES "public"."work_items"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_item_field_values" ADD CONSTRAINT "work_item_field_values_field_fk" FOREIGN KEY ("field_id","organization_id") REFERENCES "public"."custom_fields"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "labels" ADD CONSTRAINT "labels_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_item_labels" ADD CONSTRAINT "work_item_labels_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_item_labels" ADD CONSTRAINT "work_item_labels_work_item_fk" FOREIGN KEY ("work_item_id","organization_id") REFERENCES "public"."work_items"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_item_labels" ADD CONSTRAINT "work_item_labels_label_fk" FOREIGN KEY ("label_id","organization_id") REFERENCES "public"."labels"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "custom_fields_key_unique" ON "custom_fields" USING btree ("organization_id","key");--> statement-breakpoint
CREATE INDEX "work_item_field_values_number_idx" ON "work_item_field_values" USING btree ("project_id","field_id","number_value","work_item_id") WHERE "work_item_field_values"."number_value" is not null;--> statement-breakpoint
CREATE INDEX "work_item_field_values_date_idx" ON "work_item_field_values" USING btree ("project_id","field_id","date_value","work_item_id") WHERE "work_item_field_values"."date_value" is not null;--> statement-breakpoint
CREATE INDEX "work_item_field_values_text_idx" ON "work_item_field_values" USING btree ("project_id","field_id","text_value","work_item_id") WHERE "work_item_field_values"."text_value" is not null;--> statement-breakpoint
CREATE INDEX "work_item_field_values_user_idx" ON "work_item_field_values" USING btree ("project_id","field_id","user_id","work_item_id") WHERE "work_item_field_values"."user_id" is not null;--> statement-breakpoint
CREATE INDEX "work_item_field_values_options_idx" ON "work_item_field_values" USING gin ("option_ids");--> statement-breakpoint
CREATE INDEX "work_item_field_values_field_idx" ON "work_item_field_values" USING btree ("field_id","project_id");--> statement-breakpoint
CREATE UNIQUE INDEX "labels_name_unique" ON "labels" USING btree ("organization_id",lower("name"));--> statement-breakpoint
CREATE INDEX "work_item_labels_label_idx" ON "work_item_labels" USING btree ("label_id","project_id","work_item_id");