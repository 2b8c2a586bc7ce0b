CREATE TABLE "page_share_links" (
	"id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"page_id" uuid NOT NULL,
	"token_hash" text NOT NULL,
	"token_prefix" text NOT NULL,
	"created_by" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone,
	CONSTRAINT "page_share_links_pkey" PRIMARY KEY("id","organization_id")
);
--> statement-breakpoint
ALTER TABLE "page_share_links" ADD CONSTRAINT "page_share_links_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "page_share_links" ADD CONSTRAINT "page_share_links_page_fk" FOREIGN KEY ("page_id","organization_id") REFERENCES "public"."pages"("id","organization_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "page_share_links" ADD CONSTRAINT "page_share_links_created_by_fk" FOREIGN KEY ("created_by","organization_id") REFERENCES "public"."users"("id","organization_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "page_share_links_token_unique" ON "page_share_links" USING btree ("token_hash","organization_id");--> statement-breakpoint
CREATE INDEX "page_share_links_page_idx" ON "page_share_links" USING btree ("page_id");