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
ALTER TABLE "public"."users" ADD COLUMN IF NOT EXISTS "status" text DEFAULT 'active'::text;

ALTER TABLE "public"."users" ALTER COLUMN "status" DROP DEFAULT;

ALTER TABLE "public"."users" ADD COLUMN IF NOT EXISTS "level" integer DEFAULT '1'::integer;

ALTER TABLE "public"."users" ALTER COLUMN "level" SET DEFAULT 2;

ALTER TABLE "public"."users" ADD COLUMN IF NOT EXISTS "since" timestamp with time zone DEFAULT '2026-01-01 00:00:00+00'::timestamp with time zone;

ALTER TABLE "public"."users" ALTER COLUMN "since" DROP DEFAULT;

