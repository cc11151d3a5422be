-- create (previous version)
CREATE DATABASE IF NOT EXISTS `target_db` CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_bin;

CREATE TABLE IF NOT EXISTS `target_db`.`items` (
	`id` BIGINT NOT NULL,
	PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_bin;

-- alter
-- error: schema: add column "f" to public.items: the value the source's existing rows hold in it does not fit MySQL: column "f" (double precision) value "NaN": MySQL's FLOAT and DOUBLE hold no NaN or infinity
