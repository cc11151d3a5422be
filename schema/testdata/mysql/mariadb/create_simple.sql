-- create
CREATE DATABASE IF NOT EXISTS `target_db` CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin;

CREATE TABLE IF NOT EXISTS `target_db`.`users` (
	`id` BIGINT NOT NULL,
	`name` LONGTEXT NOT NULL,
	`email` VARCHAR(255),
	`created_at` DATETIME(6) NOT NULL,
	PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;

-- default of created_at left out: it is not a constant (MySQL gets no expression written for PostgreSQL)
