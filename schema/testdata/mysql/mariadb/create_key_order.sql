-- create
CREATE DATABASE IF NOT EXISTS `sales` CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin;

CREATE TABLE IF NOT EXISTS `sales`.`order_items` (
	`line` INT NOT NULL,
	`note` LONGTEXT,
	`order_id` BIGINT NOT NULL,
	PRIMARY KEY (`order_id`, `line`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;

