CREATE TABLE "change_versions" (
	"scope_id" uuid NOT NULL,
	"organization_id" uuid NOT NULL,
	"version" bigint NOT NULL,
	CONSTRAINT "change_versions_pkey" PRIMARY KEY("scope_id","organization_id")
);
