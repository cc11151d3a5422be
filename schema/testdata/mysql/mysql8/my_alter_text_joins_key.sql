-- create (previous version)
CREATE DATABASE IF NOT EXISTS `target_db` CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_bin;

CREATE TABLE IF NOT EXISTS `target_db`.`items` (
	`id` BIGINT NOT NULL,
	`code` LONGTEXT,
	PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_bin;

-- alter
-- when the primary key is (id)
ALTER TABLE `target_db`.`items` DROP PRIMARY KEY;

ALTER TABLE `target_db`.`items` MODIFY COLUMN `code` VARCHAR(766) COLLATE utf8mb4_0900_bin NOT NULL;

-- when the primary key is not (id, code)
ALTER TABLE `target_db`.`items` ADD PRIMARY KEY (`id`, `code`);

