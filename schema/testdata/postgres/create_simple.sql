-- create
CREATE SCHEMA IF NOT EXISTS "public";

CREATE TABLE IF NOT EXISTS "public"."users" (
	"id" bigint NOT NULL,
	"name" text NOT NULL,
	"email" character varying(255),
	"created_at" timestamp with time zone NOT NULL,
	PRIMARY KEY ("id")
);

