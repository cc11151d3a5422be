-- create
CREATE SCHEMA IF NOT EXISTS "sales";

CREATE TABLE IF NOT EXISTS "sales"."order_items" (
	"order_id" bigint NOT NULL,
	"line" integer NOT NULL,
	"qty" numeric(10,2) DEFAULT 0 NOT NULL,
	"note" text,
	PRIMARY KEY ("order_id", "line")
);

