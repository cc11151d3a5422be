-- create (previous version)
CREATE DATABASE IF NOT EXISTS `target_db` CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin;

CREATE TABLE IF NOT EXISTS `target_db`.`items` (
	`id` BIGINT NOT NULL,
	PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;

-- alter
-- error: schema: add column "e" to public.items: default cannot be reproduced on the target: (1 + 2) is an expression pgrelay cannot write for MySQL, and the source catalog shows no value existing rows hold; fix: run pgrelay once with PGRELAY_SNAPSHOT=always, which copies the tables anew
