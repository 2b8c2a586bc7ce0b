CREATE TABLE "alert_transitions" (
	"id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"alert_id" uuid NOT NULL,
	"transition" text NOT NULL,
	"value" numeric,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "alert_transitions_pkey" PRIMARY KEY("id","organization_id"),
	CONSTRAINT "alert_transitions_transition_check" CHECK ("alert_transitions"."transition" in ('fired', 'resolved'))
);
--> statement-breakpoint
CREATE TABLE "component_alerts" (
	"id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"page_id" uuid NOT NULL,
	"component_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"value" numeric,
	"for_seconds" integer NOT NULL,
	"state" text DEFAULT 'ok' NOT NULL,
	"pending_since" timestamp with time zone,
	"created_by" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "component_alerts_pkey" PRIMARY KEY("id","organization_id"),
	CONSTRAINT "component_alerts_kind_check" CHECK ("component_alerts"."kind" in ('above', 'below', 'noData')),
	CONSTRAINT "component_alerts_state_check" CHECK ("component_alerts"."state" in ('ok', 'firing')),
	CONSTRAINT "component_alerts_value_check" CHECK (("component_alerts"."kind" = 'noData') = ("component_alerts"."value" is null)),
	CONSTRAINT "component_alerts_for_check" CHECK ("component_alerts"."for_seconds" between 0 and 604800)
);
--> statement-breakpoint
ALTER TABLE "alert_transitions" ADD CONSTRAINT "alert_transitions_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "alert_transitions" ADD CONSTRAINT "alert_transitions_alert_fk" FOREIGN KEY ("alert_id","organization_id") REFERENCES "public"."component_alerts"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "component_alerts" ADD CONSTRAINT "component_alerts_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "component_alerts" ADD CONSTRAINT "component_alerts_component_fk" FOREIGN KEY ("component_id","organization_id") REFERENCES "public"."components"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "component_alerts" ADD CONSTRAINT "component_alerts_created_by_fk" FOREIGN KEY ("created_by","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "alert_transitions_alert_idx" ON "alert_transitions" USING btree ("alert_id","at");--> statement-breakpoint
CREATE INDEX "component_alerts_component_idx" ON "component_alerts" USING btree ("component_id");--> statement-breakpoint
CREATE INDEX "component_alerts_due_idx" ON "component_alerts" USING btree ("pending_since") WHERE "component_alerts"."state" = 'ok';--> statement-breakpoint
CREATE VIEW "public"."component_values" AS (select c.organization_id, c.page_id, p.name as page_name, c.id as component_id, c.title, c.type, v.value, to_timestamp(c.data_timestamp) as updated_at
    from components c join pages p on p.id = c.page_id and p.organization_id = c.organization_id cross join lateral (
      select case
        when c.type in ('horizontalBox', 'verticalBox') then (
          select t.plain::numeric
          from unnest(array[c.data->'middleText'->>'value', c.data->'bottomText'->>'value', c.data->'rightText'->>'value', c.data->'topText'->>'value', c.data->'leftText'->>'value']) with ordinality as b(raw, k)
            cross join lateral (select regexp_replace(b.raw, '[[:space:],%]', '', 'g') as plain) t
          where t.plain ~ '^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)$' order by b.k limit 1)
        when c.type = 'lineChart' then (
          select (p.point->>'y')::numeric
          from (select coalesce((c.data->>'xNumber')::boolean, false) and not exists (
              select 1 from jsonb_array_elements(c.data->'points') q(point) where not (q.point->>'x' ~ '^\s*[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][+-]?[0-9]{1,3})?\s*$')) as numeric_axis) a,
            jsonb_array_elements(c.data->'points') with ordinality as p(point, k)
          order by case when a.numeric_axis then (p.point->>'x')::numeric end desc nulls last, p.k desc
          limit 1)
        else (select sum((p.point->>'y')::numeric) from jsonb_array_elements(c.data->'points') p(point))
      end as value
    ) v);