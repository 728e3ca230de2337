-- Fleet-wide RoCE figures from a tree of `rocescope export --parquet` outputs, on one machine: the same
-- results as jobs/spark/fleet.py, as DuckDB tables (jobs/README.md says each column).
--
--   duckdb -cmd "SET VARIABLE root = '/data/roce'; SET VARIABLE window_seconds = 60; SET VARIABLE top = 10" \
--       -f jobs/duckdb/fleet.sql
--
-- root: the directory tree (every packets.parquet and flows.parquet under it; s3:// with the httpfs
-- extension). window_seconds and top default to 60 and 10.

CREATE OR REPLACE TEMP VIEW packets AS
    SELECT * FROM read_parquet(getvariable('root') || '/**/packets.parquet');
CREATE OR REPLACE TEMP VIEW flows AS
    SELECT * FROM read_parquet(getvariable('root') || '/**/flows.parquet');

-- Each flow's figures counted from its packets (how rocescope counted each frame), with its identity and
-- the figures only the analysis knows (missing PSNs, duplicates) from the flows table. NAK codes are the
-- low five bits of a NAK's AETH syndrome (0-4 named as the JSON's `naks`, 5-31 reserved).
CREATE OR REPLACE TEMP TABLE per_flow AS
WITH counted AS (
    SELECT
        "capture.file" AS capture_file,
        "rocescope.flow" AS id,
        count(*) AS packets,
        sum("frame.len") AS bytes,
        count(*) FILTER (WHERE "rocescope.class" = 'gap') AS gap_events,
        count(*) FILTER (WHERE "rocescope.class" = 'retransmission') AS retransmitted,
        count(*) FILTER (WHERE "rocescope.class" = 'nak' AND "infiniband.aeth.syndrome" & 31 = 0) AS naks_psn_seq_err,
        count(*) FILTER (WHERE "rocescope.class" = 'nak' AND "infiniband.aeth.syndrome" & 31 = 1) AS naks_invalid_request,
        count(*) FILTER (WHERE "rocescope.class" = 'nak' AND "infiniband.aeth.syndrome" & 31 = 2) AS naks_remote_access,
        count(*) FILTER (WHERE "rocescope.class" = 'nak' AND "infiniband.aeth.syndrome" & 31 = 3) AS naks_remote_op,
        count(*) FILTER (WHERE "rocescope.class" = 'nak' AND "infiniband.aeth.syndrome" & 31 = 4) AS naks_invalid_rd_request,
        count(*) FILTER (WHERE "rocescope.class" = 'nak' AND "infiniband.aeth.syndrome" & 31 >= 5) AS naks_reserved,
        count(*) FILTER (WHERE "rocescope.class" = 'rnr_nak') AS rnr_naks,
        count(*) FILTER (WHERE "ip.dsfield.ecn" = 3) AS ce,
        count(*) FILTER (WHERE "rocescope.class" = 'cnp') AS cnp,
        count(*) FILTER (WHERE "rocescope.icrc_status" = 'bad') AS icrc_bad,
        min("frame.time_epoch_ns") AS first_ns,
        max("frame.time_epoch_ns") AS last_ns
    FROM packets
    WHERE "rocescope.flow" IS NOT NULL
    GROUP BY ALL
)
SELECT
    f."capture.file" AS capture_file, f."capture.point" AS capture_point, f.id, f.src, f.dst, f.dest_qp, f.role, f.connection,
    f."psn.missing" AS missing, f."psn.duplicates" AS duplicates,
    coalesce(c.packets, 0) AS packets, coalesce(c.bytes, 0) AS bytes,
    coalesce(c.gap_events, 0) AS gap_events, coalesce(c.retransmitted, 0) AS retransmitted,
    coalesce(c.naks_psn_seq_err, 0) AS naks_psn_seq_err,
    coalesce(c.naks_invalid_request, 0) AS naks_invalid_request,
    coalesce(c.naks_remote_access, 0) AS naks_remote_access,
    coalesce(c.naks_remote_op, 0) AS naks_remote_op,
    coalesce(c.naks_invalid_rd_request, 0) AS naks_invalid_rd_request,
    coalesce(c.naks_reserved, 0) AS naks_reserved,
    coalesce(c.rnr_naks, 0) AS rnr_naks, coalesce(c.ce, 0) AS ce, coalesce(c.cnp, 0) AS cnp,
    coalesce(c.icrc_bad, 0) AS icrc_bad, c.first_ns, c.last_ns
FROM flows f
LEFT JOIN counted c ON c.capture_file = f."capture.file" AND c.id = f.id;

-- The figures added up per connection (a CM handshake's or --expect's), per (source, destination) host pair
-- across the fleet, and per capture point (`capture.point`).
SET VARIABLE counts = ['packets', 'bytes', 'gap_events', 'retransmitted', 'naks_psn_seq_err',
    'naks_invalid_request', 'naks_remote_access', 'naks_remote_op', 'naks_invalid_rd_request', 'naks_reserved',
    'rnr_naks', 'ce', 'cnp', 'icrc_bad', 'missing', 'duplicates'];

CREATE OR REPLACE TEMP TABLE per_connection AS
    SELECT capture_file, connection, count(*) AS flows, sum(COLUMNS(getvariable('counts')))::BIGINT
    FROM per_flow WHERE connection IS NOT NULL
    GROUP BY capture_file, connection;

CREATE OR REPLACE TEMP TABLE per_host_pair AS
    SELECT src, dst, count(*) AS flows, sum(COLUMNS(getvariable('counts')))::BIGINT
    FROM per_flow
    GROUP BY src, dst;

CREATE OR REPLACE TEMP TABLE per_point AS
    SELECT capture_point, count(*) AS flows, sum(COLUMNS(getvariable('counts')))::BIGINT
    FROM per_flow
    GROUP BY capture_point;

-- For exports of the capture points of one path (`export --points`): per path and pair of neighbouring
-- points, the packets lost between them, as `analyze --points` counts them. A packet (flow, PSN, opcode,
-- ICRC, IPv4 ID) seen at a point and at none after it on its path was lost on the segment after the last
-- point that saw it; requests travel the points in path order, responses (ACKs, NAKs, READ responses,
-- CNPs: an operation of 13-18 of the IBTA opcode table, the CNP, and opcodes no transport defines) in
-- the reverse order.
CREATE OR REPLACE TEMP TABLE per_segment AS
WITH placed AS (
    SELECT "capture.path" AS capture_path, "capture.point_index" AS point_index, "capture.point" AS point,
        src, dst, "infiniband.bth.destqp" AS dest_qp, "infiniband.bth.psn" AS psn,
        "infiniband.bth.opcode" AS opcode, "infiniband.invariant.crc" AS icrc, "ip.id" AS ip_id,
        ("rocescope.opcode_name" = 'UNKNOWN' OR "infiniband.bth.opcode" = 129
            OR ("infiniband.bth.opcode" & 31) BETWEEN 13 AND 18) AS response
    FROM packets
    WHERE "capture.point_index" IS NOT NULL AND "infiniband.bth.psn" IS NOT NULL
),
points AS (SELECT capture_path, point_index, any_value(point) AS point FROM placed GROUP BY ALL),
paths AS (SELECT capture_path, max(point_index) AS last FROM points GROUP BY ALL),
seen AS (
    SELECT capture_path, any_value(response) AS response, min(point_index) AS first,
        max(point_index) AS reached
    FROM placed
    GROUP BY capture_path, src, dst, dest_qp, psn, opcode, icrc, ip_id
),
lost AS (
    SELECT s.capture_path, s.response,
        CASE WHEN s.response THEN s.first - 1 ELSE s.reached END AS segment
    FROM seen s JOIN paths p USING (capture_path)
    WHERE (s.response AND s.first > 0) OR (NOT s.response AND s.reached < p.last)
)
SELECT a.capture_path, a.point_index AS segment, a.point AS from_point, b.point AS to_point,
    (count(l.segment) FILTER (WHERE NOT l.response))::BIGINT AS lost_forward,
    (count(l.segment) FILTER (WHERE l.response))::BIGINT AS lost_reverse
FROM points a
JOIN points b ON b.capture_path = a.capture_path AND b.point_index = a.point_index + 1
LEFT JOIN lost l ON l.capture_path = a.capture_path AND l.segment = a.point_index
GROUP BY ALL;

-- Per time window, the QPs and the hosts with the most trouble (gaps, retransmissions, NAKs, RNR NAKs, bad
-- ICRCs), with their CE marks and CNPs; a host is in trouble when a flow it sends or receives is.
CREATE OR REPLACE TEMP VIEW marked AS
    SELECT
        ("frame.time_epoch_ns" // 1000000000 // coalesce(getvariable('window_seconds'), 60))
            * coalesce(getvariable('window_seconds'), 60) AS window_start_s,
        "capture.file" AS capture_file, src, dst, "infiniband.bth.destqp" AS dest_qp,
        ("rocescope.class" IN ('gap', 'retransmission', 'nak', 'rnr_nak', 'bad_icrc'))::INT AS trouble,
        coalesce("ip.dsfield.ecn" = 3, false)::INT AS ce,
        coalesce("rocescope.class" = 'cnp', false)::INT AS cnp
    FROM packets;

CREATE OR REPLACE TEMP TABLE worst_qps AS
    SELECT * FROM (
        SELECT window_start_s, src, dst, dest_qp,
            sum(trouble)::BIGINT AS trouble, sum(ce)::BIGINT AS ce, sum(cnp)::BIGINT AS cnp,
            row_number() OVER (PARTITION BY window_start_s
                ORDER BY sum(trouble) DESC, src, dst, dest_qp) AS rank
        FROM marked GROUP BY window_start_s, src, dst, dest_qp HAVING sum(trouble) > 0)
    WHERE rank <= coalesce(getvariable('top'), 10);

CREATE OR REPLACE TEMP TABLE worst_hosts AS
    SELECT * FROM (
        SELECT window_start_s, host,
            sum(trouble)::BIGINT AS trouble, sum(ce)::BIGINT AS ce, sum(cnp)::BIGINT AS cnp,
            row_number() OVER (PARTITION BY window_start_s ORDER BY sum(trouble) DESC, host) AS rank
        FROM (SELECT *, unnest([src, dst]) AS host FROM marked)
        GROUP BY window_start_s, host HAVING sum(trouble) > 0)
    WHERE rank <= coalesce(getvariable('top'), 10);

SELECT * FROM worst_qps ORDER BY window_start_s, rank;
SELECT * FROM worst_hosts ORDER BY window_start_s, rank;
