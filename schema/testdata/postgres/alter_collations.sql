-- create (previous version)
CREATE SCHEMA IF NOT EXISTS "public";

CREATE TABLE IF NOT EXISTS "public"."names" (
	"id" integer NOT NULL,
	"name" text COLLATE "pg_catalog"."C",
	"sort_key" text,
	"kept" text COLLATE "pg_catalog"."C",
	PRIMARY KEY ("id")
);

-- alter
ALTER TABLE "public"."names" ADD COLUMN IF NOT EXISTS "added" text COLLATE "pg_catalog"."C";

ALTER TABLE "public"."names" ALTER COLUMN "name" TYPE text COLLATE "default";

ALTER TABLE "public"."names" ALTER COLUMN "sort_key" TYPE text COLLATE "pg_catalog"."POSIX";

ALTER TABLE "public"."names" ALTER COLUMN "kept" TYPE character varying(9) COLLATE "pg_catalog"."C" USING "kept"::character varying(9);

