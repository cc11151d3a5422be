-- create
CREATE SCHEMA IF NOT EXISTS "public";

CREATE TABLE IF NOT EXISTS "public"."names" (
	"id" integer NOT NULL,
	"name" text COLLATE "pg_catalog"."C",
	"sort_key" character varying(20) COLLATE "pg_catalog"."POSIX" NOT NULL,
	PRIMARY KEY ("id")
);

