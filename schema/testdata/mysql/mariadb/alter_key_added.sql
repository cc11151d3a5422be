-- create (previous version)
CREATE DATABASE IF NOT EXISTS `target_db` CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin;

CREATE TABLE IF NOT EXISTS `target_db`.`log` (
	`id` INT NOT NULL,
	`line` LONGTEXT
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;

-- alter
-- when the primary key is not (id)
ALTER TABLE `target_db`.`log` ADD PRIMARY KEY (`id`);

