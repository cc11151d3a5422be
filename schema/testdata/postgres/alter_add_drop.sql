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
ALTER TABLE "public"."users" DROP COLUMN IF EXISTS "email";

ALTER TABLE "public"."users" ADD COLUMN IF NOT EXISTS "nickname" text DEFAULT 'anon'::text;

ALTER TABLE "public"."users" ADD COLUMN IF NOT EXISTS "visits" bigint;

