CREATE TABLE "user_invitations" (
	"id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"token_hash" text NOT NULL,
	"created_by" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "user_invitations_pkey" PRIMARY KEY("id","organization_id")
);
--> statement-breakpoint
CREATE TABLE "project_keys" (
	"key" text NOT NULL,
	"organization_id" uuid NOT NULL,
	"project_id" uuid NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "project_keys_pkey" PRIMARY KEY("key","organization_id")
);
--> statement-breakpoint
ALTER TABLE "users" DROP CONSTRAINT "users_status_check";--> statement-breakpoint
DROP INDEX "work_items_project_priority_idx";--> statement-breakpoint
ALTER TABLE "projects" ADD COLUMN "key" text;--> statement-breakpoint
-- Existing projects get a key from their name's first three letters (PRJ without two), numbered
-- within the organization when two share them (ENG, ENG2): letters-only bases cannot collide with
-- another base's numbered key.
UPDATE "projects" p SET "key" = d.base || CASE WHEN d.n = 1 THEN '' ELSE d.n::text END
  FROM (
    SELECT id, organization_id, base, row_number() OVER (PARTITION BY organization_id, base ORDER BY created_at, id) AS n
      FROM (
        SELECT id, organization_id, created_at,
               CASE WHEN length(regexp_replace(name, '[^A-Za-z]', '', 'g')) >= 2
                    THEN upper(left(regexp_replace(name, '[^A-Za-z]', '', 'g'), 3)) ELSE 'PRJ' END AS base
          FROM "projects"
      ) b
  ) d
 WHERE p.id = d.id AND p.organization_id = d.organization_id;--> statement-breakpoint
ALTER TABLE "projects" ALTER COLUMN "key" SET DEFAULT ('P' || upper(substr(md5(random()::text), 1, 8)));--> statement-breakpoint
ALTER TABLE "projects" ALTER COLUMN "key" SET NOT NULL;--> statement-breakpoint
INSERT INTO "project_keys" ("key", "organization_id", "project_id", "created_at") SELECT "key", "organization_id", "id", "created_at" FROM "projects";--> statement-breakpoint
ALTER TABLE "user_invitations" ADD CONSTRAINT "user_invitations_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "user_invitations" ADD CONSTRAINT "user_invitations_user_fk" FOREIGN KEY ("user_id","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "project_keys" ADD CONSTRAINT "project_keys_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "project_keys" ADD CONSTRAINT "project_keys_project_fk" FOREIGN KEY ("project_id","organization_id") REFERENCES "public"."projects"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "user_invitations_token_hash_unique" ON "user_invitations" USING btree ("token_hash","organization_id");--> statement-breakpoint
CREATE UNIQUE INDEX "user_invitations_user_unique" ON "user_invitations" USING btree ("user_id","organization_id");--> statement-breakpoint
CREATE INDEX "users_organization_status_username_idx" ON "users" USING btree ("organization_id","status","username","id");--> statement-breakpoint
CREATE UNIQUE INDEX "projects_organization_key_unique" ON "projects" USING btree ("organization_id","key");--> statement-breakpoint
CREATE INDEX "work_items_project_urgency_idx" ON "work_items" USING btree ("project_id",(("priority" + 4) % 5),"id");--> statement-breakpoint
ALTER TABLE "users" ADD CONSTRAINT "users_status_check" CHECK ("users"."status" in ('active', 'deactivated', 'invited'));--> statement-breakpoint
ALTER TABLE "projects" ADD CONSTRAINT "projects_key_check" CHECK ("projects"."key" ~ '^[A-Z][A-Z0-9]{1,9}$');--> statement-breakpoint
CREATE VIEW "public"."project_directory" AS (select id, organization_id, key, name from projects);--> statement-breakpoint
CREATE VIEW "public"."project_key_directory" AS (select key, organization_id, project_id from project_keys);