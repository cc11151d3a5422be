-- create
CREATE DATABASE IF NOT EXISTS `My "Schema"` CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin;

CREATE TABLE IF NOT EXISTS `My "Schema"`.`Order Items ü` (
	`Id` INT NOT NULL,
	`we"ird` VARCHAR(767) NOT NULL,
	`with space` LONGTEXT,
	`ünïcödé 名前` LONGTEXT,
	`select` LONGTEXT,
	`back\slash 'quote'` LONGTEXT DEFAULT 'it\'s \\ here',
	PRIMARY KEY (`Id`, `we"ird`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;

