-- create
CREATE SCHEMA IF NOT EXISTS "public";

CREATE TABLE IF NOT EXISTS "public"."boxes" (
	"id" integer NOT NULL,
	"label" text GENERATED ALWAYS AS (('box '::text || id)) STORED,
	"w" integer,
	"h" integer,
	"area" integer GENERATED ALWAYS AS ((w * h)) STORED,
	PRIMARY KEY ("id")
);

