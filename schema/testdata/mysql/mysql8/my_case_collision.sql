-- create
CREATE DATABASE IF NOT EXISTS `target_db` CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_bin;

-- error: schema: table public.items: columns "Id" and "id" have the same name for MySQL, which compares column names case-insensitively: rename one on the source or leave the table out (PGRELAY_TABLES)
