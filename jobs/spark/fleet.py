"""Fleet-wide RoCE figures from any number of `rocescope export --parquet` outputs (docs/export.md), on
Spark: every `packets.parquet` and `flows.parquet` under INPUT (a directory tree, local or on object
storage: s3a://, gs://, abfss://, hdfs://) is read as one dataset.

    spark-submit jobs/spark/fleet.py INPUT [--output DIR] [--window-seconds 60] [--top 10]

It computes (jobs/README.md says each column):
- per_flow: each flow's figures counted from its packets (how rocescope counted each frame): packets, bytes,
  PSN gaps, retransmissions, NAKs by code, RNR NAKs, CE marks, CNPs, bad ICRCs; with the flow's identity and
  the figures only the analysis knows (missing PSNs, duplicates) from the flows table;
- per_connection, per_host_pair, per_point: the same added up per connection (a CM handshake's or --expect's),
  per (source, destination) host pair across the fleet, and per capture point (`capture.point`);
- per_segment: for exports of the capture points of one path (`export --points`), the packets lost on each
  segment between neighbouring points, each way;
- worst_qps, worst_hosts: per time window, the QPs and the hosts with the most trouble (gaps,
  retransmissions, NAKs, RNR NAKs, bad ICRCs), with their CE marks and CNPs.

With --output each result is written as Parquet to DIR/NAME; without, the worst QPs and hosts are printed.
"""
import argparse

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

# AETH NAK codes (IBTA 9.7.5.2.8, the low five bits of a NAK's syndrome), as the JSON's `naks` names them;
# codes 5-31 are reserved.
NAK_CODES = ["psn_seq_err", "invalid_request", "remote_access", "remote_op", "invalid_rd_request"]

# The classes rocescope gives frames that show loss or damage (docs/export.md, `rocescope.class`).
TROUBLE = ["gap", "retransmission", "nak", "rnr_nak", "bad_icrc"]

# The figures per_flow counts, added up by the other results.
COUNTS = (
    ["packets", "bytes", "gap_events", "retransmitted"]
    + [f"naks_{n}" for n in NAK_CODES]
    + ["naks_reserved", "rnr_naks", "ce", "cnp", "icrc_bad"]
)


def read(spark, root, table):
    """Every TABLE.parquet under ROOT, its dotted column names with underscores (`psn.missing` ->
    `psn_missing`: Spark reads dots as struct fields)."""
    df = (
        spark.read.option("recursiveFileLookup", "true")
        .option("pathGlobFilter", f"{table}.parquet")
        .parquet(root)
    )
    return df.toDF(*[c.replace(".", "_") for c in df.columns])


def count_if(condition):
    return F.sum(F.when(condition, 1).otherwise(0))


def per_flow(packets, flows):
    cls = F.col("rocescope_class")
    code = F.col("infiniband_aeth_syndrome").bitwiseAND(31)
    nak = cls == "nak"
    counted = (
        packets.where(F.col("rocescope_flow").isNotNull())
        .groupBy("capture_file", F.col("rocescope_flow").alias("id"))
        .agg(
            F.count(F.lit(1)).alias("packets"),
            F.sum("frame_len").alias("bytes"),
            count_if(cls == "gap").alias("gap_events"),
            count_if(cls == "retransmission").alias("retransmitted"),
            *[count_if(nak & (code == i)).alias(f"naks_{n}") for i, n in enumerate(NAK_CODES)],
            count_if(nak & (code >= len(NAK_CODES))).alias("naks_reserved"),
            count_if(cls == "rnr_nak").alias("rnr_naks"),
            count_if(F.col("ip_dsfield_ecn") == 3).alias("ce"),
            count_if(cls == "cnp").alias("cnp"),
            count_if(F.col("rocescope_icrc_status") == "bad").alias("icrc_bad"),
            F.min("frame_time_epoch_ns").alias("first_ns"),
            F.max("frame_time_epoch_ns").alias("last_ns"),
        )
    )
    known = flows.select(
        "capture_file",
        "capture_point",
        "id",
        "src",
        "dst",
        "dest_qp",
        "role",
        "connection",
        F.col("psn_missing").alias("missing"),
        F.col("psn_duplicates").alias("duplicates"),
    )
    return known.join(counted, ["capture_file", "id"], "left").fillna(0, subset=COUNTS)


def per_segment(packets):
    """Per path and pair of neighbouring points of exports made with `--points` (docs/export.md): the packets
    lost between them, as `analyze --points` counts them. A packet (flow, PSN, opcode, ICRC, IPv4 ID) seen
    at a point and at none after it on its path was lost on the segment after the last point that saw it;
    requests travel the points in path order, responses (ACKs, NAKs, READ responses, CNPs: an operation
    of 13-18 of the IBTA opcode table, the CNP, and opcodes no transport defines) in the reverse order."""
    op = F.col("infiniband_bth_opcode")
    placed = packets.where(
        F.col("capture_point_index").isNotNull() & F.col("infiniband_bth_psn").isNotNull()
    ).withColumn(
        "response",
        (F.col("rocescope_opcode_name") == "UNKNOWN") | (op == 0x81) | op.bitwiseAND(31).between(13, 18),
    )
    points = placed.groupBy("capture_path", "capture_point_index").agg(
        F.first("capture_point").alias("point")
    )
    last = points.groupBy("capture_path").agg(F.max("capture_point_index").alias("last"))
    identity = ["capture_path", "src", "dst", "infiniband_bth_destqp", "infiniband_bth_psn",
                "infiniband_bth_opcode", "infiniband_invariant_crc", "ip_id"]
    seen = placed.groupBy(*identity).agg(
        F.first("response").alias("response"),
        F.min("capture_point_index").alias("first"),
        F.max("capture_point_index").alias("reached"),
    )
    lost = (
        seen.join(last, "capture_path")
        .where((F.col("response") & (F.col("first") > 0)) | (~F.col("response") & (F.col("reached") < F.col("last"))))
        .select(
            "capture_path",
            F.when(F.col("response"), F.col("first") - 1).otherwise(F.col("reached")).alias("segment"),
            "response",
        )
    )
    a, b = points.alias("a"), points.alias("b")
    segments = a.join(
        b,
        (F.col("a.capture_path") == F.col("b.capture_path"))
        & (F.col("b.capture_point_index") == F.col("a.capture_point_index") + 1),
    ).select(
        F.col("a.capture_path").alias("capture_path"),
        F.col("a.capture_point_index").alias("segment"),
        F.col("a.point").alias("from_point"),
        F.col("b.point").alias("to_point"),
    )
    return (
        segments.join(lost, ["capture_path", "segment"], "left")
        .groupBy("capture_path", "segment", "from_point", "to_point")
        .agg(
            count_if(F.col("response").isNotNull() & ~F.col("response")).alias("lost_forward"),
            count_if(F.col("response").isNotNull() & F.col("response")).alias("lost_reverse"),
        )
    )


def added_up(flows, keys):
    sums = [F.sum(c).alias(c) for c in COUNTS + ["missing", "duplicates"]]
    return flows.groupBy(*keys).agg(F.count(F.lit(1)).alias("flows"), *sums)


def worst(packets, window_seconds, top):
    """Per window: the QPs and hosts with the most trouble, the `top` of each."""
    window = (F.col("frame_time_epoch_ns") / 1e9 / window_seconds).cast("long") * window_seconds
    marked = packets.select(
        window.alias("window_start_s"),
        "capture_file",
        "src",
        "dst",
        F.col("infiniband_bth_destqp").alias("dest_qp"),
        F.col("rocescope_class").isin(TROUBLE).cast("int").alias("trouble"),
        # A frame without IP (native InfiniBand) carries no CE mark: 0, not null (as the DuckDB job).
        F.coalesce(F.col("ip_dsfield_ecn") == 3, F.lit(False)).cast("int").alias("ce"),
        F.coalesce(F.col("rocescope_class") == "cnp", F.lit(False)).cast("int").alias("cnp"),
    )
    sums = [F.sum(c).alias(c) for c in ("trouble", "ce", "cnp")]

    def ranked(df, keys):
        rank = Window.partitionBy("window_start_s").orderBy(F.desc("trouble"), *keys)
        return (
            df.groupBy("window_start_s", *keys)
            .agg(*sums)
            .where(F.col("trouble") > 0)
            .withColumn("rank", F.row_number().over(rank))
            .where(F.col("rank") <= top)
        )

    qps = ranked(marked, ["src", "dst", "dest_qp"])
    # A host is in trouble when a flow it sends or receives is.
    hosts = marked.withColumn("host", F.explode(F.array("src", "dst")))
    return qps, ranked(hosts, ["host"])


def figures(spark, root, window_seconds=60, top=10):
    """Every result, by name."""
    packets = read(spark, root, "packets")
    flows = per_flow(packets, read(spark, root, "flows"))
    qps, hosts = worst(packets, window_seconds, top)
    return {
        "per_flow": flows,
        "per_connection": added_up(
            flows.where(F.col("connection").isNotNull()), ["capture_file", "connection"]
        ),
        "per_host_pair": added_up(flows, ["src", "dst"]),
        "per_point": added_up(flows, ["capture_point"]),
        "per_segment": per_segment(packets),
        "worst_qps": qps,
        "worst_hosts": hosts,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input", help="a directory tree of exports (local path or object-storage URL)")
    ap.add_argument("--output", help="write each result as Parquet to OUTPUT/NAME")
    ap.add_argument("--window-seconds", type=int, default=60)
    ap.add_argument("--top", type=int, default=10, help="QPs and hosts kept per window")
    args = ap.parse_args()
    spark = SparkSession.builder.appName("rocescope-fleet").getOrCreate()
    results = figures(spark, args.input, args.window_seconds, args.top)
    for name, df in results.items():
        if args.output:
            df.write.mode("overwrite").parquet(f"{args.output}/{name}")
        elif name.startswith("worst"):
            print(name)
            df.orderBy("window_start_s", "rank").show(50, truncate=False)
    spark.stop()


if __name__ == "__main__":
    main()
