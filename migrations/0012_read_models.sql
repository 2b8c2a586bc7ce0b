CREATE VIEW "public"."user_directory" AS (select id, organization_id, username, display_name, avatar_url, role, status from users);--> statement-breakpoint
CREATE VIEW "public"."entry_documents" AS (select id, organization_id, project_id, work_item_id, kind, body, author_id, position, created_at, updated_at, search_vector from entries);--> statement-breakpoint
CREATE VIEW "public"."relationship_links" AS (select id, organization_id, project_id, source_work_item_id, target_work_item_id, type, created_by, created_at, updated_at from relationships);--> statement-breakpoint
CREATE VIEW "public"."team_directory" AS (select id, organization_id, name from teams);--> statement-breakpoint
CREATE VIEW "public"."team_memberships" AS (select team_id, user_id, organization_id from team_members);--> statement-breakpoint
CREATE VIEW "public"."work_item_documents" AS (select id, organization_id, project_id, number, title, description, status, priority, assignee_id, due_date, position, created_by, created_at, updated_at, search_vector from work_items);--> statement-breakpoint
CREATE VIEW "public"."page_viewers" AS (select id as page_id, created_by as user_id, organization_id from pages where created_by is not null
    union select page_id, principal_id, organization_id from page_access where principal_type = 'user'
    union select pa.page_id, tm.user_id, pa.organization_id from page_access pa join team_memberships tm on tm.team_id = pa.principal_id where pa.principal_type = 'team');
