-- Joins: index-lookup joins through ALEX when the ON clause fixes the inner table's key.
CREATE TABLE dept (id int PRIMARY KEY, name text NOT NULL);
CREATE TABLE emp (id int PRIMARY KEY, name text NOT NULL, dept_id int);
CREATE TABLE tag (code text PRIMARY KEY, emp_id int);
INSERT INTO dept VALUES (1, 'eng'), (2, 'ops');
INSERT INTO emp VALUES (1, 'ann', 1), (2, 'bob', 2), (3, 'cid', NULL);
INSERT INTO tag VALUES ('t1', 1), ('t2', 3);
EXPLAIN SELECT e.name, d.name FROM emp e JOIN dept d ON e.dept_id = d.id;
EXPLAIN SELECT e.name, d.name FROM emp e LEFT JOIN dept d ON d.id = e.dept_id WHERE e.id > 1;
EXPLAIN SELECT e.name, d.name FROM emp e, dept d WHERE e.dept_id = d.id AND d.name = 'eng';
EXPLAIN SELECT t.code, e.name FROM tag t JOIN emp e ON e.id = t.emp_id JOIN dept d ON d.id = e.dept_id;
EXPLAIN SELECT a.name, b.name FROM dept a JOIN dept b ON a.id < b.id;
EXPLAIN SELECT e.name, t.code FROM emp e JOIN tag t ON t.code = 't' || e.id;
EXPLAIN SELECT e.name, d.name FROM emp e FULL JOIN dept d ON e.dept_id = d.id;
EXPLAIN SELECT a.name, b.name FROM dept a FULL OUTER JOIN dept b ON a.id < b.id;
-- A single-column secondary index on the inner table's join column: index lookups when the
-- outer side is estimated small against the inner table, a hash join when it is not.
CREATE INDEX emp_dept ON emp (dept_id);
INSERT INTO emp VALUES (4, 'dan', 1), (5, 'eve', 2);
EXPLAIN SELECT d.name, e.name FROM dept d JOIN emp e ON e.dept_id = d.id WHERE d.id = 1;
EXPLAIN SELECT d.name, e.name FROM dept d LEFT JOIN emp e ON e.dept_id = d.id WHERE d.id = 2;
EXPLAIN SELECT a.name, b.name FROM emp a JOIN emp b ON b.dept_id = a.dept_id;
