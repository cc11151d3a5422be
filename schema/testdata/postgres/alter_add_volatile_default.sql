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
-- error: schema: add column "joined" to public.users: default cannot be reproduced on the target: now() is not immutable, and existing source rows hold the values it gave on the source; fix: add the column on the target by hand with the source's values, or on the source add it without a default and set the default in a second ALTER TABLE
