-- Secondary indexes and non-indexed predicates.
CREATE TABLE emp (id int PRIMARY KEY, name text NOT NULL, dept text, salary int);
CREATE INDEX emp_dept ON emp (dept);
CREATE UNIQUE INDEX emp_name ON emp (name);
CREATE INDEX emp_salary ON emp (salary);
INSERT INTO emp VALUES (1, 'ann', 'eng', 120), (2, 'bob', 'eng', 100), (3, 'cid', 'ops', 90);
EXPLAIN SELECT id FROM emp WHERE dept = 'eng';
EXPLAIN SELECT id FROM emp WHERE name = 'bob';
EXPLAIN SELECT id FROM emp WHERE salary BETWEEN 95 AND 130;
EXPLAIN SELECT id FROM emp WHERE salary > 100 AND dept = 'ops';
EXPLAIN SELECT id FROM emp WHERE name LIKE 'a%';
EXPLAIN SELECT dept, count(*) FROM emp GROUP BY dept HAVING count(*) > 1 ORDER BY dept;
EXPLAIN SELECT DISTINCT dept FROM emp ORDER BY dept DESC NULLS LAST;
EXPLAIN SELECT id FROM emp WHERE id IN (SELECT id FROM emp WHERE salary > 95);
