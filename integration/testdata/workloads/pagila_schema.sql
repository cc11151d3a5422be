-- A schema of pagila's shape (the PostgreSQL sample database): an enum and a
-- domain, sequences no column owns (pg_dump writes serials that way), one
-- shared by two tables and one in another schema under a name needing quotes,
-- a tsvector column a trigger fills (NOT NULL), last_update triggers,
-- foreign keys, a check, a partitioned payment table with partitions, views
-- (one over the partitioned table, one using an aggregate), a materialized
-- view, SQL and PL/pgSQL functions, a procedure, an aggregate, comments.
CREATE TYPE public.mpaa_rating AS ENUM ('G', 'PG', 'PG-13', 'R', 'NC-17');
CREATE DOMAIN public.year AS integer CONSTRAINT year_check CHECK (VALUE >= 1901 AND VALUE <= 2155);
CREATE TYPE public.film_summary AS (title text, rating public.mpaa_rating);

CREATE FUNCTION public.last_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.last_update = CURRENT_TIMESTAMP;
    RETURN NEW;
END $$;

CREATE FUNCTION public._group_concat(text, text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
SELECT CASE WHEN $2 IS NULL THEN $1 WHEN $1 IS NULL THEN $2 ELSE $1 || ', ' || $2 END
$$;
CREATE AGGREGATE public.group_concat(text) (SFUNC = public._group_concat, STYPE = text);

CREATE SEQUENCE public.language_language_id_seq;
CREATE TABLE public.language (
    language_id integer DEFAULT nextval('public.language_language_id_seq'::regclass) NOT NULL PRIMARY KEY,
    name character(20) NOT NULL,
    last_update timestamp with time zone DEFAULT now() NOT NULL
);

CREATE SEQUENCE public.film_film_id_seq;
CREATE TABLE public.film (
    film_id integer DEFAULT nextval('public.film_film_id_seq'::regclass) NOT NULL PRIMARY KEY,
    title text NOT NULL,
    description text,
    release_year public.year,
    language_id integer NOT NULL REFERENCES public.language (language_id) ON UPDATE CASCADE ON DELETE RESTRICT,
    rental_rate numeric(4,2) DEFAULT 4.99 NOT NULL,
    rating public.mpaa_rating DEFAULT 'G'::public.mpaa_rating,
    last_update timestamp with time zone DEFAULT now() NOT NULL,
    fulltext tsvector NOT NULL
);
CREATE INDEX film_fulltext_idx ON public.film USING gist (fulltext);
CREATE TRIGGER film_fulltext_trigger BEFORE INSERT OR UPDATE ON public.film
    FOR EACH ROW EXECUTE FUNCTION tsvector_update_trigger('fulltext', 'pg_catalog.english', 'title', 'description');
CREATE TRIGGER last_updated BEFORE UPDATE ON public.film FOR EACH ROW EXECUTE FUNCTION public.last_updated();
COMMENT ON TABLE public.film IS 'Films in the catalogue';
COMMENT ON COLUMN public.film.fulltext IS 'Filled by film_fulltext_trigger';

-- One sequence for two tables.
CREATE SEQUENCE public.person_id_seq;
CREATE TABLE public.actor (
    actor_id integer DEFAULT nextval('public.person_id_seq'::regclass) NOT NULL PRIMARY KEY,
    first_name text NOT NULL,
    last_name text NOT NULL,
    last_update timestamp with time zone DEFAULT now() NOT NULL
);
CREATE TRIGGER last_updated BEFORE UPDATE ON public.actor FOR EACH ROW EXECUTE FUNCTION public.last_updated();
CREATE TABLE public.film_actor (
    actor_id integer NOT NULL REFERENCES public.actor (actor_id),
    film_id integer NOT NULL REFERENCES public.film (film_id),
    last_update timestamp with time zone DEFAULT now() NOT NULL,
    PRIMARY KEY (actor_id, film_id)
);

CREATE TABLE public.customer (
    customer_id integer DEFAULT nextval('public.person_id_seq'::regclass) NOT NULL PRIMARY KEY,
    store_id integer NOT NULL,
    first_name text NOT NULL,
    last_name text NOT NULL,
    email text,
    activebool boolean DEFAULT true NOT NULL,
    create_date date DEFAULT CURRENT_DATE NOT NULL,
    last_update timestamp with time zone DEFAULT now(),
    CONSTRAINT customer_store_check CHECK (store_id > 0)
);
CREATE TRIGGER last_updated BEFORE UPDATE ON public.customer FOR EACH ROW EXECUTE FUNCTION public.last_updated();

CREATE SEQUENCE public.rental_rental_id_seq;
CREATE TABLE public.rental (
    rental_id integer DEFAULT nextval('public.rental_rental_id_seq'::regclass) NOT NULL PRIMARY KEY,
    rental_date timestamp with time zone NOT NULL,
    film_id integer NOT NULL REFERENCES public.film (film_id),
    customer_id integer NOT NULL REFERENCES public.customer (customer_id) ON DELETE RESTRICT,
    return_date timestamp with time zone,
    last_update timestamp with time zone DEFAULT now() NOT NULL
);

-- A sequence in another schema, under a name that needs quotes.
CREATE SCHEMA "Billing";
CREATE SEQUENCE "Billing"."Invoice No" START WITH 1000;
CREATE TABLE "Billing".invoice (
    invoice_no bigint DEFAULT nextval('"Billing"."Invoice No"'::regclass) PRIMARY KEY,
    customer_id integer NOT NULL REFERENCES public.customer (customer_id),
    total numeric(8,2) NOT NULL
);

CREATE SEQUENCE public.payment_payment_id_seq;
CREATE TABLE public.payment (
    payment_id integer DEFAULT nextval('public.payment_payment_id_seq'::regclass) NOT NULL,
    customer_id integer NOT NULL REFERENCES public.customer (customer_id),
    rental_id integer NOT NULL,
    amount numeric(5,2) NOT NULL CONSTRAINT payment_amount_check CHECK (amount >= 0),
    payment_date timestamp with time zone NOT NULL,
    PRIMARY KEY (payment_date, payment_id)
) PARTITION BY RANGE (payment_date);
CREATE INDEX payment_customer_idx ON public.payment (customer_id);
CREATE TABLE public.payment_p2022_01 PARTITION OF public.payment FOR VALUES FROM ('2022-01-01 00:00:00+00') TO ('2022-02-01 00:00:00+00');
CREATE TABLE public.payment_p2022_02 PARTITION OF public.payment FOR VALUES FROM ('2022-02-01 00:00:00+00') TO ('2022-03-01 00:00:00+00');
CREATE TABLE public.payment_p2022_03 PARTITION OF public.payment FOR VALUES FROM ('2022-03-01 00:00:00+00') TO ('2022-04-01 00:00:00+00');

CREATE VIEW public.customer_list AS
    SELECT cu.customer_id AS id, cu.first_name || ' ' || cu.last_name AS name, cu.store_id AS sid
    FROM public.customer cu;
CREATE VIEW public.film_list AS
    SELECT film.film_id AS fid, film.title, film.rating, public.group_concat(actor.first_name || ' ' || actor.last_name) AS actors
    FROM public.film LEFT JOIN public.film_actor ON film_actor.film_id = film.film_id
    LEFT JOIN public.actor ON actor.actor_id = film_actor.actor_id
    GROUP BY film.film_id, film.title, film.rating;
CREATE VIEW public.sales_by_customer AS
    SELECT c.customer_id, sum(p.amount) AS total_sales
    FROM public.payment p JOIN public.customer_list cl ON cl.id = p.customer_id JOIN public.customer c ON c.customer_id = cl.id
    GROUP BY c.customer_id;
CREATE MATERIALIZED VIEW public.rental_by_film AS
    SELECT f.title, count(r.rental_id) AS rentals FROM public.rental r JOIN public.film f ON f.film_id = r.film_id GROUP BY f.title
    WITH DATA;
CREATE UNIQUE INDEX rental_by_film_title ON public.rental_by_film (title);

CREATE FUNCTION public.film_in_stock(p_film_id integer, OUT p_count bigint) RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT count(*) FROM public.rental WHERE film_id = $1 AND return_date IS NOT NULL
$$;
CREATE FUNCTION public.customer_balance(p_customer_id integer) RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE
    v numeric;
BEGIN
    SELECT coalesce(sum(amount), 0) INTO v FROM public.payment WHERE customer_id = p_customer_id;
    RETURN v;
END $$;
COMMENT ON FUNCTION public.customer_balance(integer) IS 'What a customer paid';
CREATE FUNCTION public.summary(f public.film) RETURNS public.film_summary LANGUAGE sql AS $$ SELECT ROW(f.title, f.rating)::public.film_summary $$;
CREATE PROCEDURE public.rename_customer(p_id integer, p_last text) LANGUAGE sql AS $$
    UPDATE public.customer SET last_name = p_last WHERE customer_id = p_id
$$;

INSERT INTO public.language (name) VALUES ('English'), ('Italian');
INSERT INTO public.film (title, description, release_year, language_id, rating) VALUES
    ('ACADEMY DINOSAUR', 'An epic drama', 2006, 1, 'PG'),
    ('ACE GOLDFINGER', 'An astounding epistle', 2006, 1, 'G'),
    ('ADAPTATION HOLES', 'An astounding reflection', 2006, 2, 'NC-17');
INSERT INTO public.actor (first_name, last_name) VALUES ('PENELOPE', 'GUINESS'), ('NICK', 'WAHLBERG');
INSERT INTO public.film_actor (actor_id, film_id) VALUES (1, 1), (2, 1), (2, 2);
INSERT INTO public.customer (store_id, first_name, last_name, email) VALUES
    (1, 'MARY', 'SMITH', 'mary@example.com'), (1, 'PATRICIA', 'JOHNSON', NULL), (2, 'LINDA', 'WILLIAMS', NULL);
INSERT INTO public.rental (rental_date, film_id, customer_id, return_date) VALUES
    ('2022-01-05', 1, 3, '2022-01-07'), ('2022-02-10', 2, 4, NULL), ('2022-03-01', 1, 5, '2022-03-02');
INSERT INTO "Billing".invoice (customer_id, total) VALUES (3, 10.50), (4, 3.20);
INSERT INTO public.payment (customer_id, rental_id, amount, payment_date) VALUES
    (3, 1, 2.99, '2022-01-05'), (4, 2, 4.99, '2022-02-10'), (5, 3, 0.99, '2022-03-01'), (3, 3, 1.99, '2022-03-02');
REFRESH MATERIALIZED VIEW public.rental_by_film;
