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
ALTER TABLE "public"."users" ALTER COLUMN "id" TYPE bigint USING "id"::bigint;

ALTER TABLE "public"."users" ALTER COLUMN "email" TYPE character varying(320) USING "email"::character varying(320);

ALTER TABLE "public"."users" ALTER COLUMN "score" DROP DEFAULT;

ALTER TABLE "public"."users" ALTER COLUMN "score" TYPE numeric(6,1) USING "score"::numeric(6,1);

ALTER TABLE "public"."users" ALTER COLUMN "score" SET DEFAULT 0.0;

