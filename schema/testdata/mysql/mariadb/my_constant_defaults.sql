-- create
CREATE DATABASE IF NOT EXISTS `target_db` CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin;

CREATE TABLE IF NOT EXISTS `target_db`.`items` (
	`id` BIGINT NOT NULL,
	`t` LONGTEXT DEFAULT 'it\'s',
	`n` DECIMAL(5,2) DEFAULT 1.5,
	`b` TINYINT(1) DEFAULT 1,
	`by` LONGBLOB DEFAULT X'00ff',
	`j` JSON DEFAULT '{\"a\": 1}',
	`f` DOUBLE,
	`e` INT,
	`at` DATETIME(6),
	`z` LONGTEXT DEFAULT NULL,
	PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;

-- default of f left out: the MySQL column cannot hold its value
-- default of e left out: it is an expression, which is PostgreSQL SQL
-- default of at left out: it is not a constant (MySQL gets no expression written for PostgreSQL)
