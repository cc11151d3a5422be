-- create
CREATE SCHEMA IF NOT EXISTS "sales";

CREATE TABLE IF NOT EXISTS "sales"."order_items" (
	"line" integer NOT NULL,
	"note" text,
	"order_id" bigint NOT NULL,
	PRIMARY KEY ("order_id", "line")
);

