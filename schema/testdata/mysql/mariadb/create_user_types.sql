-- create
CREATE DATABASE IF NOT EXISTS `app` CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin;

CREATE TABLE IF NOT EXISTS `app`.`people` (
	`id` INT NOT NULL,
	`mood` VARCHAR(63) NOT NULL DEFAULT 'ok',
	`moods` JSON,
	`home` LONGTEXT,
	`homes` JSON,
	`span` LONGTEXT,
	`tag` VARCHAR(63),
	PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;

