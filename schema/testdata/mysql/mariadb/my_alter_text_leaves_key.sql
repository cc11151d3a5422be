-- create (previous version)
CREATE DATABASE IF NOT EXISTS `target_db` CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin;

CREATE TABLE IF NOT EXISTS `target_db`.`items` (
	`id` BIGINT NOT NULL,
	`code` VARCHAR(766) NOT NULL,
	PRIMARY KEY (`id`, `code`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;

-- alter
-- when the primary key is (id, code)
ALTER TABLE `target_db`.`items` DROP PRIMARY KEY;

ALTER TABLE `target_db`.`items` MODIFY COLUMN `code` LONGTEXT COLLATE utf8mb4_nopad_bin;

-- when the primary key is not (id)
ALTER TABLE `target_db`.`items` ADD PRIMARY KEY (`id`);

