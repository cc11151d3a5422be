-- create
CREATE SCHEMA IF NOT EXISTS "public";

CREATE TABLE IF NOT EXISTS "public"."prices" (
	"sku" character varying(32) NOT NULL,
	"price" numeric(12,4) NOT NULL,
	"ratio" numeric,
	"code" character(3),
	"bits" bit varying(16),
	"at" timestamp(3) without time zone,
	"tags" character varying(20)[],
	"matrix" double precision[],
	PRIMARY KEY ("sku")
);

