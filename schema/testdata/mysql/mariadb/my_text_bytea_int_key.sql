-- create
CREATE DATABASE IF NOT EXISTS `target_db` CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin;

CREATE TABLE IF NOT EXISTS `target_db`.`items` (
	`id` BIGINT NOT NULL,
	`code` VARCHAR(383) NOT NULL,
	`raw` VARBINARY(1532) NOT NULL,
	`v` LONGTEXT,
	PRIMARY KEY (`id`, `code`, `raw`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;

