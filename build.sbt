// Spark, Scala and Avro are `provided`: the connector runs on the jars of the Spark it is put on.
// Compiled against the oldest supported Spark, the one jar runs on every supported minor (4.0 to
// 4.3; `make smoke-all` proves it, and spark_replicate.configure_spark refuses other minors).
// `bin/sbt -Dspark.version=4.2.0 test` compiles and tests against another Spark.
val sparkVersion = sys.props.getOrElse("spark.version", "4.0.4")
val avroVersion = "1.12.0"
// The delta-spark release built for each Spark minor, as python/src/spark_replicate/_delta.py names
// them, for the Delta tests of `Changes.applyChanges` (Spark 4.3 has none: those tests cancel).
val deltaForSpark = Map("4.0" -> "delta-spark_2.13:4.0.1", "4.1" -> "delta-spark_4.1_2.13:4.1.0",
  "4.2" -> "delta-spark_4.2_2.13:4.4.0")
val delta = deltaForSpark.get(sparkVersion.split('.').take(2).mkString(".")).toSeq.map { coordinates =>
  val Array(artifact, release) = coordinates.split(':')
  "io.delta" % artifact % release % Test
}
// Spark's Kafka connector and its token provider at the nearest patch Maven Central serves for
// `sparkVersion` (the same map as python/src/spark_replicate/kafka_connector.py); exact otherwise.
val kafkaVersions = Map(
  "4.0.4" -> ("4.0.4", "4.0.0"), "4.1.4" -> ("4.1.3", "4.1.1"), "4.2.1" -> ("4.2.0", "4.2.0")
).getOrElse(sparkVersion, (sparkVersion, sparkVersion))

ThisBuild / scalaVersion := "2.13.16"
ThisBuild / organization := "io.sparkreplicate"
ThisBuild / version := "0.1.0"

lazy val root = (project in file("."))
  .settings(
    name := "spark-replicate",
    Compile / scalaSource := baseDirectory.value / "scala" / "main",
    Compile / resourceDirectory := baseDirectory.value / "scala" / "resources",
    Test / scalaSource := baseDirectory.value / "scala" / "test",
    Test / resourceDirectory := baseDirectory.value / "scala" / "test-resources",
    scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-Xlint:_,-byname-implicit",
      "-Wunused:imports,privates,locals,patvars", "-Werror", "-release", "17"),
    // StringView is Java for its static finals; it is held to the same standard.
    Compile / compile / javacOptions ++= Seq("-Xlint:all", "-Werror", "--release", "17"),
    libraryDependencies ++= Seq(
      "org.apache.spark" %% "spark-sql" % sparkVersion % Provided,
      // Reading Kafka delegates to Spark's own Kafka source, found by name at run time (the user
      // puts it on the session: --packages, or configure_spark(kafka=True)); here for the tests.
      "org.apache.spark" %% "spark-sql-kafka-0-10" % kafkaVersions._1 % Provided,
      "org.apache.avro" % "avro" % avroVersion % Provided,
      "org.scalatest" %% "scalatest" % "3.2.19" % Test,
      "org.scalatestplus" %% "scalacheck-1-18" % "3.2.19.0" % Test) ++ delta,
    dependencyOverrides += "org.apache.spark" %% "spark-token-provider-kafka-0-10" % kafkaVersions._2,
    // The Python package and the tests pick the jar up under a stable name.
    Compile / packageBin / artifactPath := target.value / "spark-replicate.jar",
    Compile / resourceGenerators += Def.task {
      val file = (Compile / resourceManaged).value / "spark-replicate-build.properties"
      IO.write(file, s"sparkVersion=$sparkVersion\nversion=${version.value}\n")
      Seq(file)
    }.taskValue,
    Test / fork := true,
    // Each test's duration in the output (-oD), so that slow suites show in CI logs.
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oD"),
    Test / parallelExecution := false,
    Test / javaOptions ++= Seq("-Xmx2g", "-Duser.timezone=UTC") ++ JavaModules.opens ++
      // `bin/sbt -Dreplicate.fuzz.cases=1000000 ...` and `-Ddecoderbench.cases=...` reach the forked test JVM.
      sys.props.collect { case (k, v) if k.startsWith("replicate.fuzz.") || k.startsWith("decoderbench.") => s"-D$k=$v" }
  )
