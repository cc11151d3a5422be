-- create
CREATE DATABASE IF NOT EXISTS `target_db` CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin;

CREATE TABLE IF NOT EXISTS `target_db`.`items` (
	`a` VARCHAR(132) NOT NULL,
	`b` CHAR(36) NOT NULL,
	`c` CHAR(36) NOT NULL,
	`d` CHAR(36) NOT NULL,
	`e` CHAR(36) NOT NULL,
	`f` CHAR(36) NOT NULL,
	`g` CHAR(36) NOT NULL,
	`h` CHAR(36) NOT NULL,
	`i` CHAR(36) NOT NULL,
	`j` CHAR(36) NOT NULL,
	`k` CHAR(36) NOT NULL,
	`l` CHAR(36) NOT NULL,
	`m` CHAR(36) NOT NULL,
	`n` CHAR(36) NOT NULL,
	`o` CHAR(36) NOT NULL,
	`p` VARCHAR(132) NOT NULL,
	PRIMARY KEY (`a`, `b`, `c`, `d`, `e`, `f`, `g`, `h`, `i`, `j`, `k`, `l`, `m`, `n`, `o`, `p`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin;

