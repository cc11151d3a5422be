-- create (previous version)
CREATE DATABASE IF NOT EXISTS `target_db` CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin;

CREATE TABLE IF NOT EXISTS `target_db`.`pair` (
	`id` INT NOT NULL,
	`a` LONGTEXT,
	`b` LONGTEXT,
	PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;

-- alter
-- when column a exists
ALTER TABLE `target_db`.`pair` RENAME COLUMN `a` TO `pgrelay_rename_0`;

-- when column b exists
ALTER TABLE `target_db`.`pair` RENAME COLUMN `b` TO `pgrelay_rename_1`;

-- when column pgrelay_rename_0 exists
ALTER TABLE `target_db`.`pair` RENAME COLUMN `pgrelay_rename_0` TO `b`;

-- when column pgrelay_rename_1 exists
ALTER TABLE `target_db`.`pair` RENAME COLUMN `pgrelay_rename_1` TO `c`;

