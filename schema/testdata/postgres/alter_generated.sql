-- create (previous version)
CREATE SCHEMA IF NOT EXISTS "public";

CREATE TABLE IF NOT EXISTS "public"."boxes" (
	"id" integer NOT NULL,
	"label" text GENERATED ALWAYS AS (('box '::text || id)) STORED,
	"w" integer,
	"h" integer,
	"area" integer GENERATED ALWAYS AS ((w * h)) STORED,
	"old" integer GENERATED ALWAYS AS ((w + 1)) STORED,
	"frozen" integer GENERATED ALWAYS AS ((h + 1)) STORED,
	PRIMARY KEY ("id")
);

-- alter
ALTER TABLE "public"."boxes" ADD COLUMN IF NOT EXISTS "frozen" integer;

ALTER TABLE "public"."boxes" DROP COLUMN IF EXISTS "old";

ALTER TABLE "public"."boxes" ALTER COLUMN "frozen" DROP EXPRESSION IF EXISTS;

ALTER TABLE "public"."boxes" DROP COLUMN IF EXISTS "area";

ALTER TABLE "public"."boxes" ADD COLUMN IF NOT EXISTS "area" bigint GENERATED ALWAYS AS ((w * h)::bigint) STORED;

ALTER TABLE "public"."boxes" ADD COLUMN IF NOT EXISTS "depth" integer GENERATED ALWAYS AS ((w - h)) STORED;

