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
CREATE DATABASE IF NOT EXISTS `archive` CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_bin;

-- when table target_db.users exists
RENAME TABLE `target_db`.`users` TO `archive`.`Old Users`;

