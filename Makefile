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

.PHONY: demo test jar install scala-test python-test clean

demo: install
	$(VENV)/bin/spark-replicate demo

test: scala-test python-test

scala-test:
	bin/sbt test

python-test: install
	$(PY) -m pytest -q tests

jar: $(JAR)

$(JAR): $(SCALA_INPUTS)
	bin/sbt package

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# The jar must be inside the package before pip builds it; reinstalled every time so that the
# installed package always carries the jar just built.
install: $(JAR) $(VENV)/bin/python
	cp $(JAR) $(PACKAGED_JAR)
	$(PY) -m pip install -q "./python[test]"
	$(PY) -m pip install -q --no-deps --force-reinstall ./python

clean:
	rm -rf target project/target $(VENV) $(PACKAGED_JAR) python/build
