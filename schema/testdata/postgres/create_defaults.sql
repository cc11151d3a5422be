-- create
CREATE SCHEMA IF NOT EXISTS "public";

CREATE TABLE IF NOT EXISTS "public"."defaults" (
	"id" integer NOT NULL,
	"n" integer DEFAULT 42 NOT NULL,
	"label" text DEFAULT 'none'::text,
	"sum" integer DEFAULT (1 + 2),
	"uid" uuid,
	"at" timestamp with time zone DEFAULT CURRENT_TIMESTAMP,
	"rnd" uuid DEFAULT gen_random_uuid(),
	PRIMARY KEY ("id")
);

