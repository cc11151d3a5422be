-- create
CREATE DATABASE IF NOT EXISTS `target_db` CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin;

-- error: schema: table public.items: key column "doc" is jsonb, which maps to MySQL's JSON, and a JSON column cannot be part of a MySQL key: the table cannot be replicated to MySQL (leave it out of PGRELAY_TABLES or give it another replica identity)
