CREATE VIEW "public"."user_directory" AS (select id, organization_id, username, display_name, avatar_url, role, status from users);--> statement-breakpoint
CREATE VIEW "public"."team_directory" AS (select id, organization_id, name from teams);--> statement-breakpoint
CREATE VIEW "public"."team_memberships" AS (select team_id, user_id, organization_id from team_members);