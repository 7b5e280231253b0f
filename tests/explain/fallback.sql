-- Text and composite primary keys: the ordered fallback index.
CREATE TABLE codes (code text PRIMARY KEY, label text);
INSERT INTO codes VALUES ('a', 'x'), ('b', 'y'), ('c', 'z');
CREATE TABLE pairs (region text, seq bigint, qty int, PRIMARY KEY (region, seq));
INSERT INTO pairs VALUES ('eu', 1, 5), ('eu', 2, 6), ('us', 1, 7);
EXPLAIN SELECT label FROM codes WHERE code = 'b';
EXPLAIN SELECT label FROM codes WHERE code >= 'b';
EXPLAIN SELECT qty FROM pairs WHERE region = 'eu' AND seq = 2;
EXPLAIN SELECT qty FROM pairs WHERE region = 'eu';
EXPLAIN SELECT qty FROM pairs WHERE seq = 1;
