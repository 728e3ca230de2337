"""Fleet-wide figures of `rocescope gen mesh --parquet` runs (docs/json.md, the `mesh` table), on Spark: every
`mesh.parquet` under INPUT (a directory tree, local or on object storage), one row per pair of each run.

mesh_hosts: per host, over every run: the pairs it took part in, those that failed (as requester and as
responder) and the mean Gb/s of the pairs it sent that passed.

usage: spark-submit jobs/spark/mesh.py INPUT [--output OUTPUT]
"""
import argparse

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def read(spark, root):
    df = (
        spark.read.option("recursiveFileLookup", "true")
        .option("pathGlobFilter", "mesh.parquet")
        .parquet(root)
    )
    return df.toDF(*[c.replace(".", "_") for c in df.columns])


def count_if(condition):
    return F.sum(F.when(condition, 1).otherwise(0))


def mesh_hosts(pairs):
    ends = pairs.select(
        F.col("src").alias("host"), F.lit(True).alias("sending"), "pass", F.col("outcome_gbps").alias("gbps")
    ).unionByName(
        pairs.select(
            F.col("dst").alias("host"),
            F.lit(False).alias("sending"),
            "pass",
            F.lit(None).cast("double").alias("gbps"),
        )
    )
    failed = ~F.col("pass")
    return ends.groupBy("host").agg(
        F.count(F.lit(1)).alias("pairs"),
        count_if(failed).alias("failed"),
        count_if(failed & F.col("sending")).alias("failed_sending"),
        count_if(failed & ~F.col("sending")).alias("failed_receiving"),
        F.avg(F.when(F.col("pass") & F.col("sending"), F.col("gbps"))).alias("gbps_sending"),
    )


def figures(spark, root):
    return {"mesh_hosts": mesh_hosts(read(spark, root))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input", help="a directory tree of gen mesh --parquet tables")
    ap.add_argument("--output", help="write each result as Parquet to OUTPUT/NAME")
    args = ap.parse_args()
    spark = SparkSession.builder.appName("rocescope-mesh").getOrCreate()
    for name, df in figures(spark, args.input).items():
        if args.output:
            df.write.mode("overwrite").parquet(f"{args.output}/{name}")
        else:
            df.orderBy(F.desc("failed"), "host").show(50, truncate=False)
    spark.stop()


if __name__ == "__main__":
    main()
