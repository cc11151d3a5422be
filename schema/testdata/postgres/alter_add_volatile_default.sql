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
-- error: schema: add column "joined" to public.users: default cannot be reproduced on the target: now() is not immutable, and existing source rows hold the values it gave on the source; pgrelay reads column defaults from the source's current catalog, so it cannot tell whether the rows got values or NULL; fix: run pgrelay once with PGRELAY_SNAPSHOT=always, which copies the tables anew
