-- create
CREATE DATABASE IF NOT EXISTS `target_db` CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_bin;

CREATE TABLE IF NOT EXISTS `target_db`.`prices` (
	`sku` VARCHAR(32) NOT NULL,
	`price` DECIMAL(12,4) NOT NULL,
	`ratio` DECIMAL(65,30),
	`code` CHAR(3),
	`bits` VARCHAR(16),
	`at` DATETIME(3),
	`tags` JSON,
	`matrix` JSON,
	PRIMARY KEY (`sku`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_bin;

