-- Citus-ready keys (README "Scaling"): every tenant table's primary key, unique indexes and
-- foreign keys include organization_id; the one global uniqueness (a user's email) moves to the
-- user_emails reference table; three tables gain the organization_id they lacked.
CREATE TABLE "user_emails" (
	"email" text PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"user_id" uuid NOT NULL
);
--> statement-breakpoint
INSERT INTO "user_emails" ("email", "organization_id", "user_id") SELECT "email", "organization_id", "id" FROM "users";
--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD COLUMN "organization_id" uuid;
--> statement-breakpoint
UPDATE "idempotency_keys" i SET "organization_id" = k."organization_id" FROM "api_keys" k WHERE k."id" = i."api_key_id";
--> statement-breakpoint
DELETE FROM "idempotency_keys" WHERE "organization_id" IS NULL;
--> statement-breakpoint
ALTER TABLE "idempotency_keys" ALTER COLUMN "organization_id" SET NOT NULL;
--> statement-breakpoint
ALTER TABLE "display_usage" ADD COLUMN "organization_id" uuid;
--> statement-breakpoint
UPDATE "display_usage" u SET "organization_id" = a."organization_id" FROM "display_accounts" a WHERE a."user_id" = u."user_id";
--> statement-breakpoint
DELETE FROM "display_usage" WHERE "organization_id" IS NULL;
--> statement-breakpoint
ALTER TABLE "display_usage" ALTER COLUMN "organization_id" SET NOT NULL;
--> statement-breakpoint
ALTER TABLE "work_item_counters" ADD COLUMN "organization_id" uuid;
--> statement-breakpoint
UPDATE "work_item_counters" c SET "organization_id" = p."organization_id" FROM "projects" p WHERE p."id" = c."project_id";
--> statement-breakpoint
DELETE FROM "work_item_counters" WHERE "organization_id" IS NULL;
--> statement-breakpoint
ALTER TABLE "work_item_counters" ALTER COLUMN "organization_id" SET NOT NULL;
--> statement-breakpoint
DROP VIEW "public"."page_viewers";
--> statement-breakpoint
ALTER TABLE "api_keys" DROP CONSTRAINT "api_keys_owner_id_users_id_fk";
--> statement-breakpoint
ALTER TABLE "sessions" DROP CONSTRAINT "sessions_user_id_users_id_fk";
--> statement-breakpoint
ALTER TABLE "components" DROP CONSTRAINT "components_page_id_pages_id_fk";
--> statement-breakpoint
ALTER TABLE "display_accounts" DROP CONSTRAINT "display_accounts_user_id_users_id_fk";
--> statement-breakpoint
ALTER TABLE "display_usage" DROP CONSTRAINT "display_usage_user_id_display_accounts_user_id_fk";
--> statement-breakpoint
ALTER TABLE "page_access" DROP CONSTRAINT "page_access_page_id_pages_id_fk";
--> statement-breakpoint
ALTER TABLE "pages" DROP CONSTRAINT "pages_created_by_users_id_fk";
--> statement-breakpoint
ALTER TABLE "entries" DROP CONSTRAINT "entries_project_id_projects_id_fk";
--> statement-breakpoint
ALTER TABLE "entries" DROP CONSTRAINT "entries_work_item_id_work_items_id_fk";
--> statement-breakpoint
ALTER TABLE "entries" DROP CONSTRAINT "entries_author_id_users_id_fk";
--> statement-breakpoint
ALTER TABLE "project_members" DROP CONSTRAINT "project_members_project_id_projects_id_fk";
--> statement-breakpoint
ALTER TABLE "project_members" DROP CONSTRAINT "project_members_user_id_users_id_fk";
--> statement-breakpoint
ALTER TABLE "project_teams" DROP CONSTRAINT "project_teams_project_id_projects_id_fk";
--> statement-breakpoint
ALTER TABLE "project_teams" DROP CONSTRAINT "project_teams_team_id_teams_id_fk";
--> statement-breakpoint
ALTER TABLE "projects" DROP CONSTRAINT "projects_created_by_users_id_fk";
--> statement-breakpoint
ALTER TABLE "deliveries" DROP CONSTRAINT "deliveries_message_id_messages_id_fk";
--> statement-breakpoint
ALTER TABLE "devices" DROP CONSTRAINT "devices_user_id_users_id_fk";
--> statement-breakpoint
ALTER TABLE "messages" DROP CONSTRAINT "messages_page_id_pages_id_fk";
--> statement-breakpoint
ALTER TABLE "messages" DROP CONSTRAINT "messages_sender_id_users_id_fk";
--> statement-breakpoint
ALTER TABLE "relationships" DROP CONSTRAINT "relationships_project_id_projects_id_fk";
--> statement-breakpoint
ALTER TABLE "relationships" DROP CONSTRAINT "relationships_source_work_item_id_work_items_id_fk";
--> statement-breakpoint
ALTER TABLE "relationships" DROP CONSTRAINT "relationships_target_work_item_id_work_items_id_fk";
--> statement-breakpoint
ALTER TABLE "relationships" DROP CONSTRAINT "relationships_created_by_users_id_fk";
--> statement-breakpoint
ALTER TABLE "team_members" DROP CONSTRAINT "team_members_team_id_teams_id_fk";
--> statement-breakpoint
ALTER TABLE "team_members" DROP CONSTRAINT "team_members_user_id_users_id_fk";
--> statement-breakpoint
ALTER TABLE "work_item_counters" DROP CONSTRAINT "work_item_counters_project_id_projects_id_fk";
--> statement-breakpoint
ALTER TABLE "work_items" DROP CONSTRAINT "work_items_project_id_projects_id_fk";
--> statement-breakpoint
ALTER TABLE "work_items" DROP CONSTRAINT "work_items_assignee_id_users_id_fk";
--> statement-breakpoint
ALTER TABLE "work_items" DROP CONSTRAINT "work_items_created_by_users_id_fk";
--> statement-breakpoint
DROP INDEX "api_keys_secret_hash_unique";
--> statement-breakpoint
DROP INDEX "sessions_token_hash_unique";
--> statement-breakpoint
DROP INDEX "users_email_unique";
--> statement-breakpoint
DROP INDEX "display_accounts_key_hash_unique";
--> statement-breakpoint
DROP INDEX "relationships_link_unique";
--> statement-breakpoint
DROP INDEX "relationships_relates_to_unique";
--> statement-breakpoint
DROP INDEX "work_items_project_number_unique";
--> statement-breakpoint
ALTER TABLE "idempotency_keys" DROP CONSTRAINT "idempotency_keys_api_key_id_key_pk";
--> statement-breakpoint
ALTER TABLE "display_usage" DROP CONSTRAINT "display_usage_user_id_day_pk";
--> statement-breakpoint
ALTER TABLE "page_access" DROP CONSTRAINT "page_access_page_id_principal_id_pk";
--> statement-breakpoint
ALTER TABLE "project_members" DROP CONSTRAINT "project_members_project_id_user_id_pk";
--> statement-breakpoint
ALTER TABLE "project_teams" DROP CONSTRAINT "project_teams_project_id_team_id_pk";
--> statement-breakpoint
ALTER TABLE "team_members" DROP CONSTRAINT "team_members_team_id_user_id_pk";
--> statement-breakpoint
ALTER TABLE "audit_logs" DROP CONSTRAINT "audit_logs_pkey";
--> statement-breakpoint
ALTER TABLE "api_keys" DROP CONSTRAINT "api_keys_pkey";
--> statement-breakpoint
ALTER TABLE "sessions" DROP CONSTRAINT "sessions_pkey";
--> statement-breakpoint
ALTER TABLE "users" DROP CONSTRAINT "users_pkey";
--> statement-breakpoint
ALTER TABLE "components" DROP CONSTRAINT "components_pkey";
--> statement-breakpoint
ALTER TABLE "display_accounts" DROP CONSTRAINT "display_accounts_pkey";
--> statement-breakpoint
ALTER TABLE "pages" DROP CONSTRAINT "pages_pkey";
--> statement-breakpoint
ALTER TABLE "entries" DROP CONSTRAINT "entries_pkey";
--> statement-breakpoint
ALTER TABLE "projects" DROP CONSTRAINT "projects_pkey";
--> statement-breakpoint
ALTER TABLE "deliveries" DROP CONSTRAINT "deliveries_pkey";
--> statement-breakpoint
ALTER TABLE "devices" DROP CONSTRAINT "devices_pkey";
--> statement-breakpoint
ALTER TABLE "messages" DROP CONSTRAINT "messages_pkey";
--> statement-breakpoint
ALTER TABLE "relationships" DROP CONSTRAINT "relationships_pkey";
--> statement-breakpoint
ALTER TABLE "teams" DROP CONSTRAINT "teams_pkey";
--> statement-breakpoint
ALTER TABLE "work_item_counters" DROP CONSTRAINT "work_item_counters_pkey";
--> statement-breakpoint
ALTER TABLE "work_items" DROP CONSTRAINT "work_items_pkey";
--> statement-breakpoint
ALTER TABLE "audit_logs" ADD CONSTRAINT "audit_logs_pkey" PRIMARY KEY("id","organization_id");
--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY("api_key_id","key","organization_id");
--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_pkey" PRIMARY KEY("id","organization_id");
--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_pkey" PRIMARY KEY("id","organization_id");
--> statement-breakpoint
ALTER TABLE "users" ADD CONSTRAINT "users_pkey" PRIMARY KEY("id","organization_id");
--> statement-breakpoint
ALTER TABLE "components" ADD CONSTRAINT "components_pkey" PRIMARY KEY("id","organization_id");
--> statement-breakpoint
ALTER TABLE "display_accounts" ADD CONSTRAINT "display_accounts_pkey" PRIMARY KEY("user_id","organization_id");
--> statement-breakpoint
ALTER TABLE "display_usage" ADD CONSTRAINT "display_usage_pkey" PRIMARY KEY("user_id","day","organization_id");
--> statement-breakpoint
ALTER TABLE "page_access" ADD CONSTRAINT "page_access_pkey" PRIMARY KEY("page_id","principal_id","organization_id");
--> statement-breakpoint
ALTER TABLE "pages" ADD CONSTRAINT "pages_pkey" PRIMARY KEY("id","organization_id");
--> statement-breakpoint
ALTER TABLE "entries" ADD CONSTRAINT "entries_pkey" PRIMARY KEY("id","organization_id");
--> statement-breakpoint
ALTER TABLE "project_members" ADD CONSTRAINT "project_members_pkey" PRIMARY KEY("project_id","user_id","organization_id");
--> statement-breakpoint
ALTER TABLE "project_teams" ADD CONSTRAINT "project_teams_pkey" PRIMARY KEY("project_id","team_id","organization_id");
--> statement-breakpoint
ALTER TABLE "projects" ADD CONSTRAINT "projects_pkey" PRIMARY KEY("id","organization_id");
--> statement-breakpoint
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_pkey" PRIMARY KEY("id","organization_id");
--> statement-breakpoint
ALTER TABLE "devices" ADD CONSTRAINT "devices_pkey" PRIMARY KEY("token","organization_id");
--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_pkey" PRIMARY KEY("id","organization_id");
--> statement-breakpoint
ALTER TABLE "relationships" ADD CONSTRAINT "relationships_pkey" PRIMARY KEY("id","organization_id");
--> statement-breakpoint
ALTER TABLE "team_members" ADD CONSTRAINT "team_members_pkey" PRIMARY KEY("team_id","user_id","organization_id");
--> statement-breakpoint
ALTER TABLE "teams" ADD CONSTRAINT "teams_pkey" PRIMARY KEY("id","organization_id");
--> statement-breakpoint
ALTER TABLE "work_item_counters" ADD CONSTRAINT "work_item_counters_pkey" PRIMARY KEY("project_id","organization_id");
--> statement-breakpoint
ALTER TABLE "work_items" ADD CONSTRAINT "work_items_pkey" PRIMARY KEY("id","organization_id");
--> statement-breakpoint
ALTER TABLE "user_emails" ADD CONSTRAINT "user_emails_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_owner_fk" FOREIGN KEY ("owner_id","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_user_fk" FOREIGN KEY ("user_id","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "components" ADD CONSTRAINT "components_page_fk" FOREIGN KEY ("page_id","organization_id") REFERENCES "public"."pages"("id","organization_id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "display_accounts" ADD CONSTRAINT "display_accounts_user_fk" FOREIGN KEY ("user_id","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "display_usage" ADD CONSTRAINT "display_usage_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "display_usage" ADD CONSTRAINT "display_usage_account_fk" FOREIGN KEY ("user_id","organization_id") REFERENCES "public"."display_accounts"("user_id","organization_id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "page_access" ADD CONSTRAINT "page_access_page_fk" FOREIGN KEY ("page_id","organization_id") REFERENCES "public"."pages"("id","organization_id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "pages" ADD CONSTRAINT "pages_created_by_fk" FOREIGN KEY ("created_by","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "entries" ADD CONSTRAINT "entries_project_fk" FOREIGN KEY ("project_id","organization_id") REFERENCES "public"."projects"("id","organization_id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "entries" ADD CONSTRAINT "entries_work_item_fk" FOREIGN KEY ("work_item_id","organization_id") REFERENCES "public"."work_items"("id","organization_id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "entries" ADD CONSTRAINT "entries_author_fk" FOREIGN KEY ("author_id","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "project_members" ADD CONSTRAINT "project_members_project_fk" FOREIGN KEY ("project_id","organization_id") REFERENCES "public"."projects"("id","organization_id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "project_members" ADD CONSTRAINT "project_members_user_fk" FOREIGN KEY ("user_id","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "project_teams" ADD CONSTRAINT "project_teams_project_fk" FOREIGN KEY ("project_id","organization_id") REFERENCES "public"."projects"("id","organization_id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "project_teams" ADD CONSTRAINT "project_teams_team_fk" FOREIGN KEY ("team_id","organization_id") REFERENCES "public"."teams"("id","organization_id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "projects" ADD CONSTRAINT "projects_created_by_fk" FOREIGN KEY ("created_by","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_message_fk" FOREIGN KEY ("message_id","organization_id") REFERENCES "public"."messages"("id","organization_id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "devices" ADD CONSTRAINT "devices_user_fk" FOREIGN KEY ("user_id","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_page_fk" FOREIGN KEY ("page_id","organization_id") REFERENCES "public"."pages"("id","organization_id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_sender_fk" FOREIGN KEY ("sender_id","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "relationships" ADD CONSTRAINT "relationships_project_fk" FOREIGN KEY ("project_id","organization_id") REFERENCES "public"."projects"("id","organization_id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "relationships" ADD CONSTRAINT "relationships_source_fk" FOREIGN KEY ("source_work_item_id","organization_id") REFERENCES "public"."work_items"("id","organization_id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "relationships" ADD CONSTRAINT "relationships_target_fk" FOREIGN KEY ("target_work_item_id","organization_id") REFERENCES "public"."work_items"("id","organization_id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "relationships" ADD CONSTRAINT "relationships_created_by_fk" FOREIGN KEY ("created_by","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "team_members" ADD CONSTRAINT "team_members_team_fk" FOREIGN KEY ("team_id","organization_id") REFERENCES "public"."teams"("id","organization_id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "team_members" ADD CONSTRAINT "team_members_user_fk" FOREIGN KEY ("user_id","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "work_item_counters" ADD CONSTRAINT "work_item_counters_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "work_item_counters" ADD CONSTRAINT "work_item_counters_project_fk" FOREIGN KEY ("project_id","organization_id") REFERENCES "public"."projects"("id","organization_id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "work_items" ADD CONSTRAINT "work_items_project_fk" FOREIGN KEY ("project_id","organization_id") REFERENCES "public"."projects"("id","organization_id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "work_items" ADD CONSTRAINT "work_items_assignee_fk" FOREIGN KEY ("assignee_id","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "work_items" ADD CONSTRAINT "work_items_created_by_fk" FOREIGN KEY ("created_by","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_secret_hash_unique" ON "api_keys" USING btree ("secret_hash","organization_id");
--> statement-breakpoint
CREATE UNIQUE INDEX "sessions_token_hash_unique" ON "sessions" USING btree ("token_hash","organization_id");
--> statement-breakpoint
CREATE UNIQUE INDEX "users_email_unique" ON "users" USING btree ("email","organization_id");
--> statement-breakpoint
CREATE UNIQUE INDEX "display_accounts_key_hash_unique" ON "display_accounts" USING btree ("key_hash","organization_id");
--> statement-breakpoint
CREATE UNIQUE INDEX "relationships_link_unique" ON "relationships" USING btree ("source_work_item_id","target_work_item_id","type","organization_id");
--> statement-breakpoint
CREATE UNIQUE INDEX "relationships_relates_to_unique" ON "relationships" USING btree (least("source_work_item_id", "target_work_item_id"),greatest("source_work_item_id", "target_work_item_id"),"organization_id") WHERE "relationships"."type" = 'relates_to';
--> statement-breakpoint
CREATE UNIQUE INDEX "work_items_project_number_unique" ON "work_items" USING btree ("project_id","number","organization_id");
--> statement-breakpoint
CREATE VIEW "public"."page_viewers" AS (select id as page_id, created_by as user_id, organization_id from pages where created_by is not null
    union select page_id, principal_id, organization_id from page_access where principal_type = 'user'
    union select pa.page_id, tm.user_id, pa.organization_id from page_access pa join team_memberships tm on tm.team_id = pa.principal_id and tm.organization_id = pa.organization_id where pa.principal_type = 'team');
