-- create (previous version)
CREATE DATABASE IF NOT EXISTS `target_db` CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_bin;

CREATE TABLE IF NOT EXISTS `target_db`.`pair` (
	`id` INT NOT NULL,
	`a` LONGTEXT,
	PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_bin;

-- alter
-- when column a exists
ALTER TABLE `target_db`.`pair` DROP COLUMN `a`;

-- when column b is missing
ALTER TABLE `target_db`.`pair` ADD COLUMN `b` LONGTEXT COLLATE utf8mb4_0900_bin;

