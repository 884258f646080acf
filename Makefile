# `make demo` builds everything and shows the connector on a generated landing zone;
# `make test` runs every Scala and Python test. Both work on a fresh machine with Java 17,
# Python 3.11 and the package registries: sbt is bootstrapped by bin/sbt.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
JAR := target/spark-replicate.jar
PACKAGED_JAR := python/src/spark_replicate/jars/spark-replicate.jar
SCALA_INPUTS := build.sbt $(shell find project scala -type f -not -path '*/target/*' 2>/dev/null)
PYTHON_INPUTS := $(shell find python -type f -not -path 'python/build/*' -not -path '*.egg-info/*' \
  -not -path '*/__pycache__/*' -not -name '*.jar' 2>/dev/null)
# The Spark the jar is compiled against (build.sbt's default) is the one `make test` runs on.
SPARK_VERSION := $(shell sed -n 's/^val sparkVersion = .*"\([0-9.]*\)".*/\1/p' build.sbt)
PACKAGE_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' python/pyproject.toml)
WHEEL := dist/spark_replicate-$(PACKAGE_VERSION)-py3-none-any.whl
# The newest pyspark of every other supported minor: `make smoke-all` runs the smoke tests on each.
OTHER_PYSPARKS := 4.1.4 4.2.1 4.3.0

.PHONY: demo test jar wheel install scala-test python-test smoke smoke-venvs smoke-all clean bench

demo: install
	$(VENV)/bin/spark-replicate demo

# The virtual environment's installs (pip, pyspark) wait on the network and the disk more than on
# the cores: on a fresh clone they run beside the Scala tests, then the Python tests run.
test:
	$(MAKE) -j2 scala-test $(VENV)/bin/python
	$(MAKE) python-test

scala-test:
	bin/sbt test

# The tests run in TEST_WORKERS processes (pytest-xdist), each with its own Spark session, Connect
# server and Kafka broker: most of a test's time is Spark's and Delta's fixed costs per job, which
# two processes overlap well even on two cores. Idle workers steal queued tests from busy ones.
TEST_WORKERS ?= 2
PYTEST = -m pytest -q -n $(TEST_WORKERS) --dist worksteal --durations=20

python-test: install
	$(PY) $(PYTEST) tests

jar: $(JAR)

$(JAR): $(SCALA_INPUTS)
	bin/sbt package

# The package as users install it: the wheel, with the jar just built inside.
wheel: $(WHEEL)

$(WHEEL): $(JAR) $(PYTHON_INPUTS) | $(VENV)/bin/python
	cp $(JAR) $(PACKAGED_JAR)
	rm -rf python/build
	$(PY) -m pip wheel -q --no-deps -w dist ./python

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "pyspark==$(SPARK_VERSION)"

# Reinstalled every time, so that the installed package always carries the jar just built.
install: $(WHEEL) $(VENV)/bin/python
	$(PY) -m pip install -q "$(WHEEL)[test]"
	$(PY) -m pip install -q --no-deps --force-reinstall $(WHEEL)

# `make smoke PYSPARK=4.2.1`: the tests marked `smoke` on that pyspark, in a virtual environment of
# its own (.venv-pyspark-4.2.1) that has that pyspark before the wheel comes, as a user's has, with
# that minor's Delta Lake release where there is one. They are few, so one process
# runs them: a second would start a second Spark session and Connect server for them.
SMOKE_PY = .venv-pyspark-$(PYSPARK)/bin/python

smoke: TEST_WORKERS = 1
smoke: $(WHEEL)
	@test -n "$(PYSPARK)" || { echo "name the pyspark to run on: make smoke PYSPARK=4.2.1" >&2; exit 2; }
	$(MAKE) .venv-pyspark-$(PYSPARK)/installed
	$(SMOKE_PY) -m pip install -q "$(WHEEL)[test]"
	$(SMOKE_PY) -m pip install -q --no-deps --force-reinstall $(WHEEL)
	$(SMOKE_PY) -c 'import pyspark; print("smoke tests on pyspark", pyspark.__version__)'
	$(SMOKE_PY) $(PYTEST) -m smoke tests

# The virtual environments of every other minor, without running anything: `.ci/run` builds them
# (downloads, mostly) after `make test`, three at a time.
smoke-venvs: $(OTHER_PYSPARKS:%=.venv-pyspark-%/installed)

# Two minors at a time: one smoke process keeps about one core busy (4.1.4 and 4.2.1 took 145 s
# each one after the other in CI, 164 s and 166 s side by side; all three at once, 208 to 212 s).
# The wheel is built first, once, and each minor's output is printed whole when it ends.
smoke-all: $(WHEEL)
	$(MAKE) -j2 --output-sync=target $(OTHER_PYSPARKS:%=smoke-on-%)

smoke-on-%:
	$(MAKE) smoke PYSPARK=$*

.venv-pyspark-%/installed:
	rm -rf .venv-pyspark-$*
	$(PYTHON) -m venv .venv-pyspark-$*
	.venv-pyspark-$*/bin/python -m pip install -q "pyspark==$*"
	touch $@

clean:
	rm -rf target project/target $(VENV) .venv-pyspark-* dist $(PACKAGED_JAR) python/build

# `make bench` measures the connector against spark-avro's from_avro, fastavro (mapInArrow and a
# Python Data Source) and the floor on generated landing zones (cached in benchmarks/data/), then
# scaling, memory, a CPU profile of the connector, the JVM decoder micro-benchmark and the stream
# (AvailableNow against the batch read, landing-to-sink latency); it writes
# benchmarks/results.json and benchmarks/RESULTS.md. `make bench BENCH_ARGS=--quick` is a smoke
# run; `python benchmarks/run.py --help` lists the other arguments. spark-avro is fetched from
# Maven Central at the Spark version (or, if that release is missing there, the nearest earlier
# patch release of the same line).
BENCH_ARGS ?=
BENCH_JARS := benchmarks/data/jars
ASYNC_PROFILER_VERSION := 4.2
ASYNC_PROFILER_JAR := $(BENCH_JARS)/async-profiler-$(ASYNC_PROFILER_VERSION).jar

bench: install $(BENCH_JARS)/spark-avro.version $(ASYNC_PROFILER_JAR)
	$(PY) -m pip install -q "spark-replicate[bench]"
	BENCH_COMMAND="make bench$(if $(BENCH_ARGS), BENCH_ARGS='$(BENCH_ARGS)')" $(PY) benchmarks/run.py \
	  --spark-avro-jar $(BENCH_JARS)/spark-avro_2.13-$$(cat $(BENCH_JARS)/spark-avro.version).jar \
	  --async-profiler-jar $(ASYNC_PROFILER_JAR) $(BENCH_ARGS)

# The profiler of the benchmark's "where the time goes" step; its jar carries the native library.
$(ASYNC_PROFILER_JAR):
	mkdir -p $(BENCH_JARS)
	mvn -q -B dependency:copy -Dartifact=tools.profiler:async-profiler:$(ASYNC_PROFILER_VERSION) \
	  -DoutputDirectory=$(BENCH_JARS)

$(BENCH_JARS)/spark-avro.version: build.sbt
	mkdir -p $(BENCH_JARS)
	@line=$(SPARK_VERSION); line=$${line%.*}; patch=$(SPARK_VERSION); patch=$${patch##*.}; \
	for p in $$(seq $$patch -1 0); do \
	  if mvn -q -B dependency:copy -Dartifact=org.apache.spark:spark-avro_2.13:$$line.$$p \
	      -DoutputDirectory=$(BENCH_JARS) >/dev/null 2>&1; then echo $$line.$$p > $@; exit 0; fi; \
	  echo "spark-avro_2.13:$$line.$$p is not available from Maven Central; trying the previous patch release" >&2; \
	done; echo "no spark-avro_2.13:$$line.x release found" >&2; exit 1
