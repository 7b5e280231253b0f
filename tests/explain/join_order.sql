-- The join planner: FROM lists joined greedily along WHERE equalities (no cross product
-- while a predicate connects the tables), filters pushed into each table, hash joins on
-- equalities, index-lookup joins when the inner side's key is fixed; set operations, WITH,
-- window functions and correlated subqueries.
CREATE TABLE j1 (id int PRIMARY KEY, k int, v int);
INSERT INTO j1 VALUES (1, 8, 1), (2, 5, 2), (3, 2, 3), (4, 9, 4), (5, 6, 5), (6, 3, 6), (7, 0, 7), (8, 7, 8), (9, 4, 9), (10, 1, 10);
CREATE TABLE j2 (id int PRIMARY KEY, k int, v int);
INSERT INTO j2 VALUES (1, 9, 2), (2, 6, 4), (3, 3, 6), (4, 0, 8), (5, 7, 10), (6, 4, 12), (7, 1, 14), (8, 8, 16), (9, 5, 18), (10, 2, 20);
CREATE TABLE j3 (id int PRIMARY KEY, k int, v int);
INSERT INTO j3 VALUES (1, 0, 3), (2, 7, 6), (3, 4, 9), (4, 1, 12), (5, 8, 15), (6, 5, 18), (7, 2, 21), (8, 9, 24), (9, 6, 27), (10, 3, 30);
CREATE TABLE j4 (id int PRIMARY KEY, k int, v int);
INSERT INTO j4 VALUES (1, 1, 4), (2, 8, 8), (3, 5, 12), (4, 2, 16), (5, 9, 20), (6, 6, 24), (7, 3, 28), (8, 0, 32), (9, 7, 36), (10, 4, 40);
CREATE TABLE j5 (id int PRIMARY KEY, k int, v int);
INSERT INTO j5 VALUES (1, 2, 5), (2, 9, 10), (3, 6, 15), (4, 3, 20), (5, 0, 25), (6, 7, 30), (7, 4, 35), (8, 1, 40), (9, 8, 45), (10, 5, 50);
CREATE TABLE j6 (id int PRIMARY KEY, k int, v int);
INSERT INTO j6 VALUES (1, 3, 6), (2, 0, 12), (3, 7, 18), (4, 4, 24), (5, 1, 30), (6, 8, 36), (7, 5, 42), (8, 2, 48), (9, 9, 54), (10, 6, 60);
CREATE INDEX j6_k ON j6 (k);
EXPLAIN SELECT count(*) FROM j1, j2, j3, j4 WHERE j1.k = j3.v AND j3.k = j2.v AND j2.k = j4.v;
EXPLAIN SELECT j1.id FROM j1, j2, j3 WHERE j1.k = j2.id AND j2.k = j3.id AND j1.v < 5;
EXPLAIN SELECT count(*) FROM j4, j3, j2, j1 WHERE j1.id = 3 AND j2.k = j1.k AND j3.v = j2.v AND j4.k = j3.k;
EXPLAIN SELECT j1.id, j5.id FROM j1, j5 WHERE j1.k + 1 = j5.k;
EXPLAIN SELECT j1.id FROM j1, j2 WHERE j1.k < j2.k;
EXPLAIN SELECT j1.id, j2.id FROM j1 LEFT JOIN j2 ON j1.k = j2.k;
EXPLAIN SELECT j1.id, j2.id FROM j1 RIGHT JOIN j2 ON j1.id = j2.k;
EXPLAIN SELECT id FROM j1 WHERE EXISTS (SELECT 1 FROM j2 WHERE j2.id = j1.k);
EXPLAIN SELECT id FROM j1 UNION SELECT id FROM j2 ORDER BY 1;
EXPLAIN WITH RECURSIVE c (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5) SELECT n FROM c;
EXPLAIN SELECT id, rank() OVER (PARTITION BY k ORDER BY v DESC) FROM j1;
EXPLAIN SELECT count(*) FROM j1 CROSS JOIN j4 JOIN j2 ON j2.k = j4.v JOIN j3 ON j1.k = j3.v AND j3.k = j2.v;
EXPLAIN SELECT j1.id FROM j1 JOIN j2 ON j1.k = j2.id JOIN j3 ON j2.k = j3.id WHERE j1.v < 5;
EXPLAIN SELECT id FROM j1 WHERE EXISTS (SELECT 1 FROM j2 WHERE j2.k = j1.k);
EXPLAIN SELECT id FROM j1 WHERE NOT EXISTS (SELECT 1 FROM j2 WHERE j2.k = j1.k AND j2.v > j1.v) AND j1.v < 8;
EXPLAIN SELECT id FROM j1 WHERE j1.k IN (SELECT j2.v FROM j2 WHERE j2.k = j1.v);
EXPLAIN SELECT id FROM j1 WHERE j1.id NOT IN (SELECT j2.id FROM j2 WHERE j2.k = j1.k);
EXPLAIN SELECT id FROM j1 WHERE j1.v NOT IN (SELECT j2.v FROM j2 WHERE j2.k = j1.k);
EXPLAIN SELECT id FROM j1 WHERE EXISTS (SELECT 1 FROM j6 WHERE j6.k = j1.k);
