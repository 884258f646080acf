"""A Spark standalone cluster for the tests: a master and workers started with pyspark's own
``bin/spark-class`` on 127.0.0.1, each daemon in its own process group (so stopping or killing a
worker takes its executors with it), and drivers run as separate Python processes. Every process
started here dies with the test process that started it (:func:`dies_with_parent`)."""

from __future__ import annotations

import ctypes
import http.client
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyspark
import pytest

SPARK_HOME = Path(pyspark.__file__).resolve().parent
START_TIMEOUT = 90
# Set in each worker's environment, which its executors and their Python workers inherit: tells
# a task which worker it runs on.
WORKER_VARIABLE = "SPARK_REPLICATE_TEST_WORKER"

# The JVMs the tests start beside their own sessions (a command, a driver to kill, a cluster, a
# broker, a Connect server) live a minute or two, or run few queries: HotSpot's optimizing
# compiler (C2) and its parallel collector cost them more CPU than they give back, and CPU is what
# bounds the suite on two cores (the apply command alone: 91 s of CPU and 50 s by default, 56 s
# and 44 s with these).
SHORT_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# The tests' own sessions run hundreds of small jobs each, over thousands of Spark's and Delta's
# methods that each run a few thousand times: C2 compiling them at its default thresholds (5,000
# calls, or 15,000 calls and loop iterations together) costs more CPU than it gives back, and C1
# alone leaves the calls slower. At ten times its thresholds C2 compiles only what stays hot: an
# apply repeated 14 times in one session used 148 to 149 s of the JVM's CPU against 185 to 210 s by
# default; 521 of the tests in two workers took 540 and 566 s against 674 and 673 s.
SESSION_JVM_OPTIONS = ("-XX:Tier4InvocationThreshold=50000 -XX:Tier4MinInvocationThreshold=6000 "
                       "-XX:Tier4CompileThreshold=150000 -XX:Tier4BackEdgeThreshold=400000")


# Where the run's archive of Spark's classes is (class data sharing: _class_archive.py), once made.
CLASS_ARCHIVE_VARIABLE = "SPARK_REPLICATE_TEST_CLASS_ARCHIVE"


def with_shared_classes(options: str) -> str:
    """The JVM ``options``, with the run's archive of the classes a Spark JVM loads from pyspark's
    jars where it is made: a JVM maps them instead of loading and verifying them one by one, which
    spares each command, driver and cluster daemon seconds of CPU. A JVM whose class path the
    archive does not match ignores it, silently (the logging options), as one does before it is made."""
    archive = os.environ.get(CLASS_ARCHIVE_VARIABLE)
    if not archive or not os.path.isfile(archive):
        return options
    return f"{options} -XX:SharedArchiveFile={archive} -Xlog:cds=off -Xlog:cds+dynamic=off"


def short_jvm_env(*confs: str, driver_options: str = "", **variables: str) -> dict[str, str]:
    """This process's environment for a child that runs Spark briefly: pyspark starts its driver
    (and a cluster its executors) with :data:`SHORT_JVM_OPTIONS` (and ``driver_options``) and the
    ``key=value`` settings ``confs``; ``variables`` are set too."""
    options = with_shared_classes(SHORT_JVM_OPTIONS)
    settings = [f"spark.executor.extraJavaOptions={options}", *confs]
    submit = ["--driver-java-options", f"{options} {driver_options}".strip(),
              *(arg for conf in settings for arg in ("--conf", conf)), "pyspark-shell"]
    return {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_SUBMIT_ARGS": shlex.join(submit),
            "SPARK_DAEMON_JAVA_OPTS": options, **variables}


def python_group(code: str, *args: str, env: dict[str, str] | None = None, **streams) -> subprocess.Popen:
    """``code`` (dedented) run with ``args`` by this interpreter in a process group of its own, so
    that SIGKILL to the group takes its JVM with it; in ``env`` (default: :func:`short_jvm_env`);
    ``streams`` are Popen's ``stdout`` and ``stderr``."""
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], env=env or short_jvm_env(),
                            start_new_session=True, preexec_fn=dies_with_parent(), **streams)


_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None
_PR_SET_PDEATHSIG = 1
# A preexec_fn makes subprocess fork() rather than spawn, and fork runs gRPC's fork handlers once a
# test has opened a Spark Connect client in the process: they wait for gRPC's threads, and a test
# run once hung in them for good (fork, under a run_python of test_connect.py, with no child made).
# Every fork here is followed by exec, which needs none of gRPC's fork support; gRPC reads this
# when the first channel opens, after this module is imported.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")


def dies_with_parent():
    """A ``preexec_fn`` for ``subprocess.Popen``: on Linux the child (and what it ``exec``s: the JVM
    of ``spark-class``) gets SIGKILL when the process that started it dies, however it dies, so a
    killed test run leaves no broker, server or cluster behind. Executors and a driver's own JVM
    follow on their own (they exit when their worker or their Python driver is gone)."""
    if _LIBC is None:
        return None
    parent = os.getpid()

    def set_death_signal() -> None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before the signal was set
            os._exit(1)
    return set_death_signal


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def master_status(web_port: int) -> dict | None:
    """The master's status, or None while its web UI cannot give it yet: a master still starting has
    been seen (in CI, under load) to answer with an empty body rather than refuse the connection."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{web_port}/json/", timeout=2) as response:
            return json.load(response)
    except (OSError, http.client.HTTPException, ValueError):
        return None


def process_alive(pid: int) -> bool:
    """True unless the process is gone or a zombie (nothing may reap it in a container)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def spark_class(main_class: str, args: list[str]) -> list[str]:
    """The command that runs ``main_class`` on pyspark's own jars."""
    return [str(SPARK_HOME / "bin" / "spark-class"), main_class, *args]


class Daemon:
    """A server process (a Spark daemon, a Kafka broker) in its own process group, logging to a file."""

    def __init__(self, name: str, command: list[str], workdir: Path, env: dict):
        self.name = name
        self.log = workdir / f"{name}.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=workdir,
                                            start_new_session=True, preexec_fn=dies_with_parent())

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            pytest.fail(f"the {self.name} exited with {self.process.returncode}:\n{self.log.read_text()[-4000:]}")

    def executor_pids(self) -> list[int]:
        """The executor JVMs this worker launched (they share its process group)."""
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or not process_alive(int(entry.name)):
                continue
            try:
                same_group = os.getpgid(int(entry.name)) == self.process.pid
                command = (entry / "cmdline").read_bytes()
            except (ProcessLookupError, FileNotFoundError, PermissionError):
                continue
            if same_group and b"CoarseGrainedExecutorBackend" in command:
                pids.append(int(entry.name))
        return pids

    def kill(self) -> None:
        """SIGKILL to the whole process group at once: the daemon and every executor it runs."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        """Stops the whole process group (the worker's executors included)."""
        for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.process.wait(timeout=wait)
                if sig == signal.SIGTERM:
                    os.killpg(self.process.pid, signal.SIGKILL)  # stragglers of the group, if any
                return
            except subprocess.TimeoutExpired:
                continue
            except ProcessLookupError:
                return


def wait_for(condition, what: str, daemons: list[Daemon], timeout: float = START_TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for daemon in daemons:
            daemon.check_alive()
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}:\n" + "\n".join(d.log.read_text()[-3000:] for d in daemons))


@dataclass
class Cluster:
    master_url: str
    master: Daemon
    workers: list[Daemon]

    @property
    def daemons(self) -> list[Daemon]:
        return [self.master, *self.workers]


@contextmanager
def standalone_cluster(workdir: Path, *, workers: int = 1, cores: int = 2, memory: str = "1g"):
    """A master and ``workers`` workers (``cores`` and ``memory`` each) on 127.0.0.1; yields the
    :class:`Cluster` and stops every daemon (and so every executor) afterwards. Worker i runs its
    executors with ``SPARK_REPLICATE_TEST_WORKER=worker-i`` in their environment."""
    conf_dir = workdir / "conf"
    conf_dir.mkdir(parents=True)
    env = short_jvm_env(SPARK_HOME=str(SPARK_HOME), SPARK_CONF_DIR=str(conf_dir), SPARK_LOCAL_IP="127.0.0.1",
                        SPARK_LOCAL_DIRS=str(workdir), SPARK_LOG_DIR=str(workdir),
                        SPARK_WORKER_DIR=str(workdir / "work"))
    port, web_port = free_port(), free_port()
    master_url = f"spark://127.0.0.1:{port}"
    daemons: list[Daemon] = []
    try:
        master = Daemon("master", spark_class("org.apache.spark.deploy.master.Master",
                        ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(web_port)]), workdir, env)
        daemons.append(master)
        wait_for(lambda: (master_status(web_port) or {}).get("status") == "ALIVE", "the master", daemons)
        for i in range(1, workers + 1):
            name = f"worker-{i}"
            daemons.append(Daemon(name, spark_class("org.apache.spark.deploy.worker.Worker",
                                  ["--host", "127.0.0.1", "--cores", str(cores), "--memory", memory,
                                   "--webui-port", str(free_port()), "--work-dir", str(workdir / "work" / name),
                                   master_url]), workdir, {**env, WORKER_VARIABLE: name}))
        wait_for(lambda: (master_status(web_port) or {}).get("aliveworkers", 0) >= workers, "the workers", daemons)
        yield Cluster(master_url, master, daemons[1:])
    finally:
        for daemon in reversed(daemons):
            daemon.stop()


class DriverProcess:
    """A driver program (Python source) running in its own interpreter, this one's, with its
    output in a log file; ``result()`` is the JSON it prints on a line ``RESULT=...``."""

    def __init__(self, code: str, log: Path):
        self.log = log
        with open(log, "wb") as out:
            self.process = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=out,
                                            stderr=subprocess.STDOUT, preexec_fn=dies_with_parent(),
                                            env=short_jvm_env())

    def check_running(self) -> None:
        if self.process.poll() is not None:
            pytest.fail(f"the driver exited early with {self.process.returncode}:\n{self.output()[-5000:]}")

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def result(self, timeout: float) -> dict:
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the driver did not finish within {timeout} s:\n{self.output()[-5000:]}")
        assert self.process.returncode == 0, self.output()[-5000:]
        line = next(line for line in self.output().splitlines() if line.startswith("RESULT="))
        return json.loads(line.removeprefix("RESULT="))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
