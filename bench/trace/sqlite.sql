-- The real program's workload (bench/trace/run.py): SQLite's shell on an
-- in-memory database, about 19 million calls of its own functions: a
-- recursive CTE filling a table, an index, grouping, a self-join, an
-- update, a sort, deletes.
CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c REAL);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 60000)
INSERT INTO t(a, b, c) SELECT (i * 7919) % 1000, printf('row-%05d', i), i / 7.0 FROM n;
CREATE INDEX t_a ON t(a);
SELECT a % 10, count(*), sum(c), max(b) FROM t GROUP BY a % 10 ORDER BY 1;
SELECT count(*) FROM t x JOIN t y ON x.a = y.a WHERE x.id < 5000 AND y.id < 5000;
UPDATE t SET c = c * 2 WHERE a < 100;
SELECT b FROM t WHERE a = 42 ORDER BY id LIMIT 3;
DELETE FROM t WHERE id % 3 = 0;
SELECT count(*), total(c) FROM t;
