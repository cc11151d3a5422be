-- create
CREATE SCHEMA IF NOT EXISTS "public";

CREATE TABLE IF NOT EXISTS "public"."defaults" (
	"id" integer NOT NULL,
	"n" integer DEFAULT 42 NOT NULL,
	"label" text DEFAULT 'none'::text,
	"sum" integer DEFAULT (1 + 2),
	"uid" uuid,
	"at" timestamp with time zone,
	PRIMARY KEY ("id")
);

