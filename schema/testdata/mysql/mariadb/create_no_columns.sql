-- create
CREATE DATABASE IF NOT EXISTS `target_db` CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin;

-- error: schema: table public.empty has no columns (or publishes none), and a MySQL table needs one: leave it out (PGRELAY_TABLES)
