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
ALTER TABLE "public"."users" ALTER COLUMN "name" SET DEFAULT ''::text;

ALTER TABLE "public"."users" ALTER COLUMN "name" DROP NOT NULL;

ALTER TABLE "public"."users" ALTER COLUMN "score" DROP DEFAULT;

