-- create (previous version)
CREATE DATABASE IF NOT EXISTS `target_db` CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin;

CREATE TABLE IF NOT EXISTS `target_db`.`users` (
	`id` INT NOT NULL,
	`name` LONGTEXT NOT NULL,
	`email` VARCHAR(255),
	`score` INT DEFAULT 0,
	PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;

-- alter
-- error: schema: add column "joined" to public.users: default cannot be reproduced on the target: now() is not immutable, and existing source rows hold the values it gave on the source; fix: run pgrelay once with PGRELAY_SNAPSHOT=always, which copies the tables anew
