-- create (previous version)
CREATE SCHEMA IF NOT EXISTS "public";

CREATE TABLE IF NOT EXISTS "public"."users" (
	"id" integer NOT NULL,
	"name" text NOT NULL,
	"email" character varying(255),
	"score" integer DEFAULT 0,
	PRIMARY KEY ("id")
);

-- alter
CREATE SCHEMA IF NOT EXISTS "archive";

ALTER TABLE "public"."users" SET SCHEMA "archive";

ALTER TABLE "archive"."users" RENAME TO "Old Users";

