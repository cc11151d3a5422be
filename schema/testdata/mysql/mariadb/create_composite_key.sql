-- create
CREATE DATABASE IF NOT EXISTS `sales` CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin;

CREATE TABLE IF NOT EXISTS `sales`.`order_items` (
	`order_id` BIGINT NOT NULL,
	`line` INT NOT NULL,
	`qty` DECIMAL(10,2) NOT NULL DEFAULT 0,
	`note` LONGTEXT,
	PRIMARY KEY (`order_id`, `line`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;

