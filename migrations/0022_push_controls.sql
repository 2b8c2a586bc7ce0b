CREATE TABLE "message_receipts" (
	"message_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"event" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "message_receipts_pkey" PRIMARY KEY("message_id","user_id","event","organization_id"),
	CONSTRAINT "message_receipts_event_check" CHECK ("message_receipts"."event" in ('delivered', 'opened'))
);
--> statement-breakpoint
CREATE TABLE "notification_preferences" (
	"user_id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"quiet_start" text,
	"quiet_end" text,
	"time_zone" text,
	"muted_page_ids" uuid[] DEFAULT '{}'::uuid[] NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "notification_preferences_pkey" PRIMARY KEY("user_id","organization_id"),
	CONSTRAINT "notification_preferences_quiet_check" CHECK (("notification_preferences"."quiet_start" is null) = ("notification_preferences"."quiet_end" is null) and ("notification_preferences"."quiet_start" is null) = ("notification_preferences"."time_zone" is null))
);
--> statement-breakpoint
CREATE TABLE "push_vapid_keys" (
	"id" uuid PRIMARY KEY NOT NULL,
	"public_key" text NOT NULL,
	"private_key" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "deliveries" DROP CONSTRAINT "deliveries_state_check";--> statement-breakpoint
DROP INDEX "deliveries_due_idx";--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "p256dh" text;--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "auth" text;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "title" text;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "priority" text DEFAULT 'high' NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "ttl_seconds" integer;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "collapse_key" text;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "send_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "critical" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "cancelled_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "message_receipts" ADD CONSTRAINT "message_receipts_message_fk" FOREIGN KEY ("message_id","organization_id") REFERENCES "public"."messages"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notification_preferences" ADD CONSTRAINT "notification_preferences_user_fk" FOREIGN KEY ("user_id","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "deliveries_user_idx" ON "deliveries" USING btree ("user_id","message_id");--> statement-breakpoint
CREATE INDEX "deliveries_due_idx" ON "deliveries" USING btree ("next_attempt_at") WHERE "deliveries"."state" in ('pending', 'held');--> statement-breakpoint
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_state_check" CHECK ("deliveries"."state" in ('pending', 'held', 'sending', 'sent', 'failed', 'pruned', 'expired', 'cancelled', 'undelivered'));--> statement-breakpoint
ALTER TABLE "devices" ADD CONSTRAINT "devices_webpush_keys_check" CHECK (("devices"."platform" = 'webpush') = ("devices"."p256dh" is not null and "devices"."auth" is not null));