-- create
CREATE DATABASE IF NOT EXISTS `target_db` CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin;

-- error: schema: table public.ttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttt: the table name "ttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttt" is longer than MySQL's 64 characters: rename it on the source or leave the table out (PGRELAY_TABLES)
