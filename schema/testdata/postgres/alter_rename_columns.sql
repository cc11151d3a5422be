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
DO $pgrelay$
DECLARE
	pk pg_catalog.name;
BEGIN
	SELECT conname INTO pk FROM pg_catalog.pg_constraint WHERE conrelid = '"public"."users"'::pg_catalog.regclass AND contype = 'p';
	IF pk IS NOT NULL THEN
		EXECUTE pg_catalog.format('ALTER TABLE %s DROP CONSTRAINT %I', '"public"."users"', pk);
	END IF;
END
$pgrelay$;

ALTER TABLE "public"."users" DROP COLUMN IF EXISTS "email";

ALTER TABLE "public"."users" RENAME COLUMN "id" TO "user_id";

ALTER TABLE "public"."users" RENAME COLUMN "name" TO "email";

ALTER TABLE "public"."users" ADD PRIMARY KEY ("user_id");

