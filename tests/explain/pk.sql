-- Integer primary key: ALEX point lookups and range scans.
CREATE TABLE acc (id int PRIMARY KEY, bid int NOT NULL, abalance int, note text);
INSERT INTO acc VALUES (1, 1, 10, 'a'), (2, 1, 20, 'b'), (3, 2, 30, 'c'), (4, 2, 40, NULL), (5, 3, 50, 'e');
EXPLAIN SELECT abalance FROM acc WHERE id = 3;
EXPLAIN SELECT abalance FROM acc WHERE id = $1;
EXPLAIN SELECT * FROM acc WHERE 3 = id AND abalance > 0;
EXPLAIN SELECT id FROM acc WHERE id BETWEEN 2 AND 4;
EXPLAIN SELECT id FROM acc WHERE id < 3;
EXPLAIN SELECT id FROM acc WHERE id >= 2 AND id < 5 AND note IS NOT NULL;
EXPLAIN SELECT id FROM acc WHERE id IN (1, 3, 5);
EXPLAIN SELECT id FROM acc ORDER BY id LIMIT 2;
EXPLAIN SELECT id FROM acc WHERE id > 1 ORDER BY id DESC LIMIT 2 OFFSET 1;
EXPLAIN SELECT min(id) FROM acc;
EXPLAIN SELECT max(id) FROM acc WHERE id < 4;
EXPLAIN SELECT count(*) FROM acc;
EXPLAIN SELECT count(*) FROM acc WHERE id BETWEEN 2 AND 3;
EXPLAIN UPDATE acc SET abalance = abalance + 5 WHERE id = 2;
EXPLAIN DELETE FROM acc WHERE id BETWEEN 1 AND 2;
EXPLAIN INSERT INTO acc VALUES (9, 1, 0, 'x') ON CONFLICT (id) DO UPDATE SET abalance = acc.abalance + 1;
-- The key range applies integer bounds exactly: no filter re-checks them; a float bound is
-- rounded outwards, so its comparison stays.
EXPLAIN SELECT id, note FROM acc WHERE id >= $1 AND id < $2;
EXPLAIN SELECT id FROM acc WHERE id > 1.5 AND id <= 4;
EXPLAIN SELECT id FROM acc WHERE id >= 2 AND id >= 3;
-- A character(n) key is read by key: the probe is padded as the stored keys are.
CREATE TABLE codes (code char(4) PRIMARY KEY, n int);
EXPLAIN SELECT n FROM codes WHERE code = 'ab';
EXPLAIN SELECT n FROM codes WHERE 'ab  ' = code;
EXPLAIN SELECT n FROM codes WHERE code IN ('ab', 'x');
EXPLAIN UPDATE codes SET n = 1 WHERE code = 'ab';
