-- create
CREATE SCHEMA IF NOT EXISTS "public";

CREATE TABLE IF NOT EXISTS "public"."log" (
	"at" timestamp(3) with time zone NOT NULL,
	"line" text
);

