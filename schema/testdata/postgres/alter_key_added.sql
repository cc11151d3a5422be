-- create (previous version)
CREATE SCHEMA IF NOT EXISTS "public";

CREATE TABLE IF NOT EXISTS "public"."log" (
	"id" integer NOT NULL,
	"line" text
);

-- alter
ALTER TABLE "public"."log" ADD PRIMARY KEY ("id");

