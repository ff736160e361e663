-- What pgvector's HNSW index of a store finds, against an exact scan, with the settings the postgres
-- storage plugin searches with (docs/postgres.md#vectors-on-the-server-pgvector): ANN recall@10 and
-- the index pages a search reads (shared buffers hit or read: the same on a busy and a quiet machine).
-- Run it on a store that mneme-bench --vector-search pgvector --dsn ... filled, with the store's schema
-- first in the search_path and pgvector's schema after it:
--   PGOPTIONS='-c search_path=bench_pgv,public' psql -X -f bench/pgvector_recall.sql
-- Queries: the midpoints of 200 pairs of neighbouring stored vectors (near the data, never a stored
-- vector itself), normalised as the plugin normalises its queries.
\set ON_ERROR_STOP on
\pset footer off
CREATE TEMP TABLE q AS
SELECT a.rid AS n, l2_normalize(a.embedding_v + b.embedding_v) AS v
FROM mneme_records a
JOIN mneme_records b ON b.rid = a.rid + 1
WHERE a.rid % greatest(1, (SELECT max(rid) / 200 FROM mneme_records)) = 0
  AND a.embedding_v IS NOT NULL AND b.embedding_v IS NOT NULL
LIMIT 200;

-- The plugin's candidate list at this size: 96, grown past 100,000 records as it grows it.
SELECT set_config('hnsw.ef_search', least(1000, greatest(10, ceil(96 * power(1 + greatest(0, log(greatest(c.reltuples, 1)::numeric / 100000)), 2))))::int::text, false) AS ef_search
FROM pg_class c WHERE c.oid = 'mneme_records'::regclass;
SET hnsw.iterative_scan = relaxed_order;
CREATE TEMP TABLE ann AS
SELECT q.n, x.rid FROM q CROSS JOIN LATERAL (
  SELECT rid FROM mneme_records WHERE embedding_v IS NOT NULL ORDER BY embedding_v <#> q.v LIMIT 10) x;

-- Pages one search reads (the mean over 50 queries).
DO $$
DECLARE
  plan json;
  pages bigint := 0;
  v vector;
  k int := 0;
BEGIN
  FOR v IN SELECT q.v FROM q ORDER BY n LIMIT 50 LOOP
    EXECUTE 'EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT rid FROM mneme_records WHERE embedding_v IS NOT NULL '
            'ORDER BY embedding_v <#> $1 LIMIT 10' INTO plan USING v;
    pages := pages + (plan->0->'Plan'->>'Shared Hit Blocks')::bigint + (plan->0->'Plan'->>'Shared Read Blocks')::bigint;
    k := k + 1;
  END LOOP;
  RAISE NOTICE 'pages read per search (mean of %): %', k, round(pages::numeric / k, 1);
END
$$;

SET enable_indexscan = off;
CREATE TEMP TABLE exact AS
SELECT q.n, x.rid FROM q CROSS JOIN LATERAL (
  SELECT rid FROM mneme_records WHERE embedding_v IS NOT NULL ORDER BY embedding_v <#> q.v LIMIT 10) x;
RESET enable_indexscan;

SELECT (SELECT count(*) FROM q) AS queries,
       (SELECT count(*) FROM mneme_records WHERE embedding_v IS NOT NULL) AS vectors,
       round((SELECT count(*) FROM ann JOIN exact USING (n, rid))::numeric / (SELECT count(*) FROM exact), 4) AS ann_recall_at_10;
