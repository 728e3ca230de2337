-- Fleet-wide figures of `rocescope gen mesh --parquet` runs, on one machine: the same results as
-- jobs/spark/mesh.py, as DuckDB tables.
--
--   duckdb -cmd "SET VARIABLE root = '/data/mesh'" -f jobs/duckdb/mesh.sql
--
-- root: the directory tree (every mesh.parquet under it, one row per pair of each run).

CREATE OR REPLACE TEMP VIEW mesh AS
    SELECT * FROM read_parquet(getvariable('root') || '/**/mesh.parquet');

-- Per host, over every run: the pairs it took part in, those that failed (as requester and as responder) and
-- the mean Gb/s of the pairs it sent that passed.
CREATE OR REPLACE TEMP TABLE mesh_hosts AS
WITH ends AS (
    SELECT src AS host, true AS sending, "pass", "outcome.gbps" AS gbps FROM mesh
    UNION ALL
    SELECT dst AS host, false AS sending, "pass", NULL AS gbps FROM mesh
)
SELECT host,
    count(*)::BIGINT AS pairs,
    (count(*) FILTER (WHERE NOT "pass"))::BIGINT AS failed,
    (count(*) FILTER (WHERE NOT "pass" AND sending))::BIGINT AS failed_sending,
    (count(*) FILTER (WHERE NOT "pass" AND NOT sending))::BIGINT AS failed_receiving,
    avg(gbps) FILTER (WHERE "pass" AND sending) AS gbps_sending
FROM ends
GROUP BY host;

SELECT * FROM mesh_hosts ORDER BY failed DESC, host;
