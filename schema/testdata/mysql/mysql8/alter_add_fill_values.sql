-- create (previous version)
CREATE DATABASE IF NOT EXISTS `target_db` CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_bin;

CREATE TABLE IF NOT EXISTS `target_db`.`users` (
	`id` INT NOT NULL,
	`name` LONGTEXT NOT NULL,
	`email` VARCHAR(255),
	`score` INT DEFAULT 0,
	PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_bin;

-- alter
-- when column status is missing
ALTER TABLE `target_db`.`users` ADD COLUMN `status` LONGTEXT COLLATE utf8mb4_0900_bin DEFAULT ('active');

ALTER TABLE `target_db`.`users` ALTER COLUMN `status` DROP DEFAULT;

-- when column level is missing
ALTER TABLE `target_db`.`users` ADD COLUMN `level` INT DEFAULT 1;

ALTER TABLE `target_db`.`users` ALTER COLUMN `level` SET DEFAULT 2;

-- when column since is missing
ALTER TABLE `target_db`.`users` ADD COLUMN `since` DATETIME(6) DEFAULT '2026-01-01 00:00:00';

ALTER TABLE `target_db`.`users` ALTER COLUMN `since` DROP DEFAULT;

