-- create
CREATE DATABASE IF NOT EXISTS `target_db` CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_bin;

CREATE TABLE IF NOT EXISTS `target_db`.`defaults` (
	`id` INT NOT NULL,
	`n` INT NOT NULL DEFAULT 42,
	`label` LONGTEXT DEFAULT ('none'),
	`sum` INT,
	`uid` CHAR(36),
	`at` DATETIME(6),
	`rnd` CHAR(36),
	PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_bin;

-- default of id left out: it is not a constant (MySQL gets no expression written for PostgreSQL)
-- default of sum left out: it is an expression, which is PostgreSQL SQL
-- default of uid left out: it is not a constant (MySQL gets no expression written for PostgreSQL)
-- default of at left out: it is not a constant (MySQL gets no expression written for PostgreSQL)
-- default of rnd left out: it is not a constant (MySQL gets no expression written for PostgreSQL)
