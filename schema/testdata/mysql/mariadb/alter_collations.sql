-- create (previous version)
CREATE DATABASE IF NOT EXISTS `target_db` CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin;

CREATE TABLE IF NOT EXISTS `target_db`.`names` (
	`id` INT NOT NULL,
	`name` LONGTEXT,
	`sort_key` LONGTEXT,
	`kept` LONGTEXT,
	PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;

-- alter
-- when column added is missing
ALTER TABLE `target_db`.`names` ADD COLUMN `added` LONGTEXT COLLATE utf8mb4_nopad_bin;

ALTER TABLE `target_db`.`names` MODIFY COLUMN `kept` VARCHAR(9) COLLATE utf8mb4_nopad_bin;

