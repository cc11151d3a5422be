-- create
CREATE SCHEMA IF NOT EXISTS "public";

CREATE TABLE IF NOT EXISTS "public"."events" (
	"at" timestamp without time zone,
	"payload" jsonb
);

