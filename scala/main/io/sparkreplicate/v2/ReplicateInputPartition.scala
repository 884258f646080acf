package io.sparkreplicate.v2

import org.apache.spark.sql.connector.read.InputPartition

import io.sparkreplicate.files.FileSplit

/** The splits one task reads. */
final case class ReplicateInputPartition(splits: Array[FileSplit]) extends InputPartition
