-- create (previous version)
CREATE SCHEMA IF NOT EXISTS "public";

CREATE TABLE IF NOT EXISTS "public"."pair" (
	"id" integer NOT NULL,
	"a" text,
	PRIMARY KEY ("id")
);

-- alter
ALTER TABLE "public"."pair" DROP COLUMN IF EXISTS "a";

ALTER TABLE "public"."pair" ADD COLUMN IF NOT EXISTS "b" text;

