CREATE TABLE "notification_activities" (
	"id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"work_item_id" uuid NOT NULL,
	"project_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"actor_id" uuid,
	"detail" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "notification_activities_pkey" PRIMARY KEY("id","organization_id")
);
--> statement-breakpoint
CREATE TABLE "notification_threads" (
	"id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"work_item_id" uuid NOT NULL,
	"project_id" uuid NOT NULL,
	"reasons" smallint NOT NULL,
	"actor_id" uuid,
	"excerpt" text NOT NULL,
	"unread" boolean NOT NULL,
	"activity_at" timestamp with time zone NOT NULL,
	"read_at" timestamp with time zone,
	"done_at" timestamp with time zone,
	CONSTRAINT "notification_threads_pkey" PRIMARY KEY("id","organization_id")
);
--> statement-breakpoint
CREATE TABLE "project_subscriptions" (
	"project_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "project_subscriptions_pkey" PRIMARY KEY("project_id","user_id","organization_id")
);
--> statement-breakpoint
CREATE TABLE "work_item_subscriptions" (
	"work_item_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"project_id" uuid NOT NULL,
	"watching" boolean NOT NULL,
	"reason" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "work_item_subscriptions_pkey" PRIMARY KEY("work_item_id","user_id","organization_id")
);
--> statement-breakpoint
ALTER TABLE "notification_activities" ADD CONSTRAINT "notification_activities_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notification_threads" ADD CONSTRAINT "notification_threads_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notification_threads" ADD CONSTRAINT "notification_threads_work_item_fk" FOREIGN KEY ("work_item_id","organization_id") REFERENCES "public"."work_items"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notification_threads" ADD CONSTRAINT "notification_threads_user_fk" FOREIGN KEY ("user_id","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "project_subscriptions" ADD CONSTRAINT "project_subscriptions_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "project_subscriptions" ADD CONSTRAINT "project_subscriptions_project_fk" FOREIGN KEY ("project_id","organization_id") REFERENCES "public"."projects"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "project_subscriptions" ADD CONSTRAINT "project_subscriptions_user_fk" FOREIGN KEY ("user_id","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_item_subscriptions" ADD CONSTRAINT "work_item_subscriptions_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_item_subscriptions" ADD CONSTRAINT "work_item_subscriptions_work_item_fk" FOREIGN KEY ("work_item_id","organization_id") REFERENCES "public"."work_items"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_item_subscriptions" ADD CONSTRAINT "work_item_subscriptions_user_fk" FOREIGN KEY ("user_id","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "notification_activities_due_idx" ON "notification_activities" USING btree ("organization_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "notification_threads_user_item_unique" ON "notification_threads" USING btree ("user_id","work_item_id","organization_id");--> statement-breakpoint
CREATE INDEX "notification_threads_inbox_idx" ON "notification_threads" USING btree ("organization_id","user_id","activity_at","id");--> statement-breakpoint
CREATE INDEX "notification_threads_unread_idx" ON "notification_threads" USING btree ("organization_id","user_id") WHERE unread and done_at is null;