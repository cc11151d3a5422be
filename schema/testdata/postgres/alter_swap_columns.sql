-- create (previous version)
CREATE SCHEMA IF NOT EXISTS "public";

CREATE TABLE IF NOT EXISTS "public"."pair" (
	"id" integer NOT NULL,
	"a" text,
	"b" text,
	PRIMARY KEY ("id")
);

-- alter
ALTER TABLE "public"."pair" RENAME COLUMN "a" TO "pgrelay_rename_0";

ALTER TABLE "public"."pair" RENAME COLUMN "b" TO "pgrelay_rename_1";

ALTER TABLE "public"."pair" RENAME COLUMN "pgrelay_rename_0" TO "b";

ALTER TABLE "public"."pair" RENAME COLUMN "pgrelay_rename_1" TO "a";

