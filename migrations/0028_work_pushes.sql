CREATE TABLE "work_notification_settings" (
	"user_id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"push_reasons" smallint NOT NULL,
	"off_reasons" smallint NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "work_notification_settings_pkey" PRIMARY KEY("user_id","organization_id")
);
--> statement-breakpoint
ALTER TABLE "messages" ALTER COLUMN "page_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ALTER COLUMN "page_name" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ALTER COLUMN "body" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "data" jsonb;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "recipient_id" uuid;--> statement-breakpoint
ALTER TABLE "work_notification_settings" ADD CONSTRAINT "work_notification_settings_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "work_notification_settings" ADD CONSTRAINT "work_notification_settings_user_fk" FOREIGN KEY ("user_id","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_recipient_fk" FOREIGN KEY ("recipient_id","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_addressed_check" CHECK (("messages"."page_id" is not null and "messages"."page_name" is not null and "messages"."body" is not null) or ("messages"."recipient_id" is not null and "messages"."data" is not null));