// Spark 4 on Java 17 needs these packages opened; pyspark's launcher passes the same set.
object JavaModules {
  val opens: Seq[String] = Seq(
    "java.lang", "java.lang.invoke", "java.lang.reflect", "java.io", "java.net", "java.nio",
    "java.util", "java.util.concurrent", "java.util.concurrent.atomic", "sun.nio.ch",
    "sun.nio.cs", "sun.security.action", "sun.util.calendar"
  ).map(pkg => s"--add-opens=java.base/$pkg=ALL-UNNAMED") ++
    Seq("-Djdk.reflect.useDirectMethodHandle=false", "-Dio.netty.tryReflectionSetAccessible=true")
}
