-- create
CREATE SCHEMA IF NOT EXISTS "app";

CREATE SCHEMA IF NOT EXISTS "app";

CREATE SCHEMA IF NOT EXISTS "ref";

DO $pgrelay$
DECLARE
	label pg_catalog.text;
	prev pg_catalog.text;
	first pg_catalog.text;
	r record;
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace WHERE n.nspname = 'app' AND t.typname = 'posint') THEN
		CREATE DOMAIN "app"."posint" AS integer DEFAULT 1 NOT NULL CONSTRAINT "posint_check" CHECK ((VALUE > 0));
	ELSE
		FOR r IN SELECT c.conname, 'CONSTRAINT "' || pg_catalog.replace(c.conname::pg_catalog.text, '"', '""') || '" ' || pg_catalog.regexp_replace(pg_catalog.pg_get_constraintdef(c.oid), ' NOT VALID$', '') AS def
			FROM pg_catalog.pg_constraint c WHERE c.contypid = '"app"."posint"'::pg_catalog.regtype AND c.contype = 'c' LOOP
			IF NOT (r.def = ANY (ARRAY['CONSTRAINT "posint_check" CHECK ((VALUE > 0))']::pg_catalog.text[])) THEN
				EXECUTE pg_catalog.format('ALTER DOMAIN %s DROP CONSTRAINT %I', '"app"."posint"', r.conname);
			END IF;
		END LOOP;
		FOREACH label IN ARRAY ARRAY['CONSTRAINT "posint_check" CHECK ((VALUE > 0))']::pg_catalog.text[] LOOP
			IF NOT EXISTS (SELECT FROM pg_catalog.pg_constraint c WHERE c.contypid = '"app"."posint"'::pg_catalog.regtype AND c.contype = 'c'
				AND 'CONSTRAINT "' || pg_catalog.replace(c.conname::pg_catalog.text, '"', '""') || '" ' || pg_catalog.regexp_replace(pg_catalog.pg_get_constraintdef(c.oid), ' NOT VALID$', '') = label) THEN
				EXECUTE pg_catalog.format('ALTER DOMAIN %s ADD %s NOT VALID', '"app"."posint"', label);
			END IF;
		END LOOP;
	END IF;
END
$pgrelay$;

DO $pgrelay$
DECLARE
	label pg_catalog.text;
	prev pg_catalog.text;
	first pg_catalog.text;
	r record;
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace WHERE n.nspname = 'app' AND t.typname = 'mood') THEN
		CREATE TYPE "app"."mood" AS ENUM ('sad', 'ok', 'happy', E'it''s \\ odd');
	ELSE
		FOREACH label IN ARRAY ARRAY['sad', 'ok', 'happy', E'it''s \\ odd']::pg_catalog.text[] LOOP
			IF NOT EXISTS (SELECT FROM pg_catalog.pg_enum WHERE enumtypid = '"app"."mood"'::pg_catalog.regtype AND enumlabel = label) THEN
				IF prev IS NULL THEN
					-- First in the source's order: before the target's first label.
					SELECT enumlabel INTO first FROM pg_catalog.pg_enum WHERE enumtypid = '"app"."mood"'::pg_catalog.regtype ORDER BY enumsortorder LIMIT 1;
					IF first IS NULL THEN
						EXECUTE pg_catalog.format('ALTER TYPE %s ADD VALUE %L', '"app"."mood"', label);
					ELSE
						EXECUTE pg_catalog.format('ALTER TYPE %s ADD VALUE %L BEFORE %L', '"app"."mood"', label, first);
					END IF;
				ELSE
					EXECUTE pg_catalog.format('ALTER TYPE %s ADD VALUE %L AFTER %L', '"app"."mood"', label, prev);
				END IF;
			END IF;
			prev := label;
		END LOOP;
	END IF;
END
$pgrelay$;

DO $pgrelay$
DECLARE
	label pg_catalog.text;
	prev pg_catalog.text;
	first pg_catalog.text;
	r record;
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace WHERE n.nspname = 'ref' AND t.typname = 'code') THEN
		CREATE DOMAIN "ref"."code" AS character varying(8) COLLATE pg_catalog."C" CONSTRAINT "code_check" CHECK (((VALUE)::text ~ '^[A-Z]+$'::text)) CONSTRAINT "Long ""enough""" CHECK ((length((VALUE)::text) > 1));
	ELSE
		FOR r IN SELECT c.conname, 'CONSTRAINT "' || pg_catalog.replace(c.conname::pg_catalog.text, '"', '""') || '" ' || pg_catalog.regexp_replace(pg_catalog.pg_get_constraintdef(c.oid), ' NOT VALID$', '') AS def
			FROM pg_catalog.pg_constraint c WHERE c.contypid = '"ref"."code"'::pg_catalog.regtype AND c.contype = 'c' LOOP
			IF NOT (r.def = ANY (ARRAY['CONSTRAINT "code_check" CHECK (((VALUE)::text ~ ''^[A-Z]+$''::text))', 'CONSTRAINT "Long ""enough""" CHECK ((length((VALUE)::text) > 1))']::pg_catalog.text[])) THEN
				EXECUTE pg_catalog.format('ALTER DOMAIN %s DROP CONSTRAINT %I', '"ref"."code"', r.conname);
			END IF;
		END LOOP;
		FOREACH label IN ARRAY ARRAY['CONSTRAINT "code_check" CHECK (((VALUE)::text ~ ''^[A-Z]+$''::text))', 'CONSTRAINT "Long ""enough""" CHECK ((length((VALUE)::text) > 1))']::pg_catalog.text[] LOOP
			IF NOT EXISTS (SELECT FROM pg_catalog.pg_constraint c WHERE c.contypid = '"ref"."code"'::pg_catalog.regtype AND c.contype = 'c'
				AND 'CONSTRAINT "' || pg_catalog.replace(c.conname::pg_catalog.text, '"', '""') || '" ' || pg_catalog.regexp_replace(pg_catalog.pg_get_constraintdef(c.oid), ' NOT VALID$', '') = label) THEN
				EXECUTE pg_catalog.format('ALTER DOMAIN %s ADD %s NOT VALID', '"ref"."code"', label);
			END IF;
		END LOOP;
	END IF;
END
$pgrelay$;

DO $pgrelay$
DECLARE
	label pg_catalog.text;
	prev pg_catalog.text;
	first pg_catalog.text;
	r record;
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace WHERE n.nspname = 'app' AND t.typname = 'address') THEN
		CREATE TYPE "app"."address" AS ("street" text, "zip" ref.code, "Floor No" app.posint);
	ELSE
		FOR r IN SELECT a.attname::pg_catalog.text AS attname FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON a.attrelid = t.typrelid
			WHERE t.oid = '"app"."address"'::pg_catalog.regtype AND a.attnum > 0 AND NOT a.attisdropped
			AND a.attname::pg_catalog.text <> ALL (ARRAY['street', 'zip', 'Floor No']::pg_catalog.text[]) LOOP
			EXECUTE pg_catalog.format('ALTER TYPE %s DROP ATTRIBUTE %I', '"app"."address"', r.attname);
		END LOOP;
		IF NOT EXISTS (SELECT FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON a.attrelid = t.typrelid
			WHERE t.oid = '"app"."address"'::pg_catalog.regtype AND a.attname = 'street' AND a.attnum > 0 AND NOT a.attisdropped) THEN
			EXECUTE pg_catalog.format('ALTER TYPE %s ADD ATTRIBUTE %s', '"app"."address"', '"street" text');
		END IF;
		IF NOT EXISTS (SELECT FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON a.attrelid = t.typrelid
			WHERE t.oid = '"app"."address"'::pg_catalog.regtype AND a.attname = 'zip' AND a.attnum > 0 AND NOT a.attisdropped) THEN
			EXECUTE pg_catalog.format('ALTER TYPE %s ADD ATTRIBUTE %s', '"app"."address"', '"zip" ref.code');
		END IF;
		IF NOT EXISTS (SELECT FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON a.attrelid = t.typrelid
			WHERE t.oid = '"app"."address"'::pg_catalog.regtype AND a.attname = 'Floor No' AND a.attnum > 0 AND NOT a.attisdropped) THEN
			EXECUTE pg_catalog.format('ALTER TYPE %s ADD ATTRIBUTE %s', '"app"."address"', '"Floor No" app.posint');
		END IF;
	END IF;
END
$pgrelay$;

DO $pgrelay$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace WHERE n.nspname = 'app' AND t.typname = 'span') THEN
		CREATE TYPE "app"."span" AS RANGE (SUBTYPE = double precision);
	END IF;
END
$pgrelay$;

DO $pgrelay1$
DECLARE
	label pg_catalog.text;
	prev pg_catalog.text;
	first pg_catalog.text;
	r record;
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace WHERE n.nspname = 'app' AND t.typname = 'tag') THEN
		CREATE TYPE "app"."tag" AS ENUM ('$pgrelay$', 'plain');
	ELSE
		FOREACH label IN ARRAY ARRAY['$pgrelay$', 'plain']::pg_catalog.text[] LOOP
			IF NOT EXISTS (SELECT FROM pg_catalog.pg_enum WHERE enumtypid = '"app"."tag"'::pg_catalog.regtype AND enumlabel = label) THEN
				IF prev IS NULL THEN
					-- First in the source's order: before the target's first label.
					SELECT enumlabel INTO first FROM pg_catalog.pg_enum WHERE enumtypid = '"app"."tag"'::pg_catalog.regtype ORDER BY enumsortorder LIMIT 1;
					IF first IS NULL THEN
						EXECUTE pg_catalog.format('ALTER TYPE %s ADD VALUE %L', '"app"."tag"', label);
					ELSE
						EXECUTE pg_catalog.format('ALTER TYPE %s ADD VALUE %L BEFORE %L', '"app"."tag"', label, first);
					END IF;
				ELSE
					EXECUTE pg_catalog.format('ALTER TYPE %s ADD VALUE %L AFTER %L', '"app"."tag"', label, prev);
				END IF;
			END IF;
			prev := label;
		END LOOP;
	END IF;
END
$pgrelay1$;

CREATE TABLE IF NOT EXISTS "app"."people" (
	"id" app.posint NOT NULL,
	"mood" app.mood DEFAULT 'ok'::app.mood NOT NULL,
	"moods" app.mood[],
	"home" app.address,
	"homes" app.address[],
	"span" app.span,
	"tag" app.tag,
	PRIMARY KEY ("id")
);

