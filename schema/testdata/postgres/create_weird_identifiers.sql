-- create
CREATE SCHEMA IF NOT EXISTS "My ""Schema""";

CREATE TABLE IF NOT EXISTS "My ""Schema"""."Order Items ü" (
	"Id" integer NOT NULL,
	"we""ird" text NOT NULL,
	"with space" text,
	"ünïcödé 名前" text,
	"select" text,
	"back\slash 'quote'" text DEFAULT 'it''s \ here'::text,
	PRIMARY KEY ("Id", "we""ird")
);

