"""capture() and profile(): start a report, install the hook, and always close it cleanly.

    with ttreport.capture("resnet-bs8", config=ttreport.Config(tensors="outputs")) as report:
        model(x)
    print(report.path, report.status)

    @ttreport.profile(name="step")
    def step(): ...

    with ttreport.capture("llm", schedule=ttreport.schedule(wait=1, warmup=1, active=3)) as run:
        for batch in batches:
            model(batch)
            run.step()   # every op is recorded; operations.step numbers them, the schedule says which are active

Closing drains the writer and tensor queues, writes the end time and status (complete,
error, interrupted), checkpoints the WAL, and puts the device hooks back. It happens when the
block ends, by exception, on SIGINT/SIGTERM and at interpreter exit; only a killed process
leaves a report whose status stays "running".

A close need not wait for the writer process (a small capture's is ~0.1 s of its ~0.2 s close, bench/README.md):
with `Capture(..., wait_on_close=False)` (or `stop(wait=False)`) the block ends once the op log holds the closing
notes and STOP, and the writer process finishes the report behind the next captures; `wait()` waits for it (the
pytest plugin, at the session's end; atexit otherwise). The log is in the page cache by then, so a kill of either
process loses no op: the next reader rebuilds the report from it (ttreport.recovery).

    run = ttreport.Capture("step-1", wait_on_close=False)
    with run:
        model(x)
    run.wait()   # the report is complete (or its error said) from here on

A run of captures (the pytest plugin's tests, profile's calls) passes `fork_ahead=True`: each close forks the next
capture's writer process while it waits for its own (writer_process.Spare), and the next start takes it instead of
forking (10-25 ms of a start of ~45 on 2 busy cores). The spare is this process as it was then; a capture takes it
only while the ops registered, the performance model's constants and the environment are the same.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import functools
import gc
import json
import os
import platform
import re
import signal
import socket
import sqlite3
import sys
import threading
import time
import uuid
import warnings
from importlib import metadata as importlib_metadata
from pathlib import Path

import torch

import device_sim
import device_sim.cluster
from device_sim import perf_constants
from ttreport import db
from ttreport.capturing import golden, rank, writer_process
from ttreport.capturing.log_perf import estimate_on_model_thread
from ttreport.capturing.log_tensors import LogStorage
from ttreport.capturing.oplog import LogQueue, LogSink
from ttreport.capturing.recorder import (
    Recorder,
    host_ops_warning,
    outer_boundary,
    user_stacklevel,
)
from ttreport.capturing.records import FLUSH, META, STOP
from ttreport.capturing.writer_process import WriterProcess
from ttreport.config import Config
from ttreport.errors import (
    CaptureActiveError,
    LossWarner,
    ReportExistsError,
    ReportIncompleteWarning,
    ReportInUseError,
    ReportPathError,
)
from ttreport.export import ops_perf
from ttreport.folder import (
    CLUSTER_DESCRIPTOR_FILE,
    CONFIG_FILE,
    MESH_MAPPING_FILE,
    OPLOG_DIR,
    RESERVE_FILE,
    holds_report,
    prepare,
    reserve_room,
    unlock,
)
from ttreport.steps import Schedule
from ttreport.storage import TensorStore

_lock = threading.Lock()
_active: Capture | None = None


class Capture(contextlib.ContextDecorator):
    """One report being captured. `path` is its folder, `db_path` its database, `status` set on close."""

    def __init__(self, target: str | os.PathLike | None = None, *, config: Config | None = None,
                 schedule: Schedule | None = None, base_name: str = "report", number_from: int | None = None,
                 wait_on_close: bool = True, fork_ahead: bool = False):
        if schedule is not None and not isinstance(schedule, Schedule):
            raise TypeError(f"schedule={schedule!r}: give ttreport.schedule(wait=..., warmup=..., active=...), or None")
        self._target = target
        self.schedule = schedule  # kept in report_metadata.schedule: which steps (step()) are active
        # profile's captures: `target` numbered from this call number on (target, target-2, ...), the first
        # name that holds no report yet; None: `target` as given.
        self.number = number_from
        self._given = config
        self._base_name = base_name
        # False: the block's end (stop()) does not wait for the writer process; wait() does (the module's docstring)
        self.wait_on_close = wait_on_close
        self._unfinished = False  # stopped without waiting: wait() has the writer's end and the folder's lock to do
        # True: the close's wait for the writer process forks the next capture's (writer_process.Spare), and this
        # capture takes one forked so: for a run of captures (the pytest plugin's tests, profile's calls), whose
        # start then does not fork. False on the way out (atexit, a signal), where no capture follows.
        self.fork_ahead = fork_ahead
        self.config: Config | None = None
        self.path: Path | None = None
        self.db_path: Path | None = None
        self.status: str | None = None
        self.recorder: Recorder | None = None
        self._stop_lock = threading.RLock()
        self._stopped = False
        self._froze = False
        self._signals: dict[int, object] = {}
        self._holder = None  # the handler that notes a signal while the report closes (_hold_signals)
        self._writer = None  # the WriterProcess, from start()
        self._chase: ops_perf.Chase | None = None  # the perf files' rows, rendered while the model waits
        self._unraisablehook = None  # the hook ours replaced while capturing (see _on_unraisable)
        self._lock_fd: int | None = None
        self._pid = os.getpid()  # the process that captures: a forked child's exit or signals never close it
        # Seconds of the close by phase, once closed ("writer": its drain and close, "perf_files"): what
        # bench/capture_overhead.py shows of a long capture's close. Two clock reads, nothing per op.
        self.close_s: dict[str, float] = {}

    def __repr__(self) -> str:
        return f"<ttreport capture {self.path or self._target!s} status={self.status or 'not started'}>"

    def __enter__(self) -> Capture:
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        pending = self._pending_signal() if exc_type is None else None
        if pending is not None:
            # A Ctrl-C that came inside a finalizer after the block's last op: it ends the block as it would have.
            self.stop("interrupted")
            handler, signum = pending
            handler(signum, None)
            return False
        if exc_type is None or (issubclass(exc_type, SystemExit) and exc.code in (None, 0)):
            status = "complete"
        elif issubclass(exc_type, KeyboardInterrupt):
            status = "interrupted"
        else:
            status = "error"
            if self.recorder is not None and not self._stopped and os.getpid() == self._pid:
                self.recorder.model_error(exc)  # its type, message and traceback: an errors row with no op
        self.stop(status)
        return False

    def _pending_signal(self):
        recorder = self.recorder
        if recorder is None or self._stopped or os.getpid() != self._pid or recorder.deferred_signal is None:
            return None
        pending, recorder.deferred_signal = recorder.deferred_signal, None
        return pending

    def _recreate_cm(self):
        # Used as a decorator, each call is a new capture (and must name a new report).
        return Capture(self._target, config=self._given, schedule=self.schedule, base_name=self._base_name,
                       wait_on_close=self.wait_on_close, fork_ahead=self.fork_ahead)

    # -- starting ----------------------------------------------------------------------------
    def start(self) -> Capture:
        global _active
        with _lock:
            if isinstance(device_sim.get_hook(), _ForkedChildHook):
                device_sim.set_hook(None)  # a forked child captures its own ops: nothing to warn about then
            if _active is not None or device_sim.get_hook() is not None:
                held = f"the capture of {_active.path}" if _active is not None else repr(device_sim.get_hook())
                raise CaptureActiveError(
                    f"a capture is already running ({held}); device_sim has one hook for all threads, so "
                    f"captures cannot nest. Close the running one first, or record both parts in it"
                )
            self._pid = os.getpid()
            self._boundary = outer_boundary(_opener())
            self.config = config = Config.from_env(self._given)
            self._lock_fd = self._take_folder(config)
            try:
                self._start(config)
            except BaseException:
                self._unlock()
                raise
            _active = self
        self._install_signal_handlers()
        atexit.register(self._at_exit)
        return self

    def _take_folder(self, config: Config) -> int:
        """Set self.path to the report folder, prepared and locked (folder.prepare); returns the lock's descriptor."""
        if self.number is None or config.overwrite:
            self.path = _resolve(_numbered(self._target, self.number or 1), config.root, self._base_name)
            return prepare(self.path, config.overwrite)
        while True:
            self.path = _resolve(_numbered(self._target, self.number), config.root, self._base_name)
            if not holds_report(self.path):
                try:
                    return prepare(self.path, overwrite=False)
                except (ReportExistsError, ReportInUseError):
                    pass  # another process took this name since it was looked at (both started at once): the next
            self.number += 1

    def _start(self, config: Config) -> None:
        path = self.path
        self.db_path = path / db.DB_FILE
        started = _now()
        # capture_timestamp_ns: with the op count, ttnn-visualizer's fingerprint of this run (a later run
        # written to the same folder name reads as another run).
        facts = {"ttreport_version": _version(), "torch_version": torch.__version__,
                 "python_version": platform.python_version(), "host": socket.gethostname(),
                 "started_at": started, "capture_timestamp_ns": time.time_ns(), "status": "running",
                 # the report's identity in a store (ttreport push): a second push of it is a no-op
                 "report_id": str(uuid.uuid4()), **_git_commit()}
        if self.schedule is not None:
            facts["schedule"] = self.schedule.to_json()  # ttreport.steps.Schedule.from_json reads it back
        if (constants := perf_constants.environment()) is not None:
            # the estimates use a team's fitted constants (DEVICE_SIM_PERF_CONSTANTS, applied as perf_model was
            # imported): which file and what it set, so a summary says so and two runs' estimates can be told apart
            facts["perf_constants"] = json.dumps(constants, sort_keys=True)
        self._rank = facts["rank"] = rank.host_rank(config.rank)
        # The writer process keeps the indexes current as it goes (its own CPU; building them at close took as
        # long, and a 1M-op close must not wait for it), but those on keys in no order (db.LATE_INDEXES),
        # which its close makes.
        # The facts go into the new file unsynced (a synced commit of them was 20-25 ms of the start).
        db.create(self.db_path, indexes=True, skip=db.LATE_INDEXES, metadata=facts)
        reserve_room(path / RESERVE_FILE)
        _write_json(path / CONFIG_FILE, {**_ttnn_config_keys(config, path), "config": config.to_json(),
                                         "schema_version": db.head_revision(),
                                         **{k: v for k, v in facts.items() if k != "status"}})
        # TT-NN's reports carry UMD's descriptor of the whole machine, which ttnn-visualizer's topology view reads
        # (without it: "Cluster description not found" on every page). Written now, while there is room: the
        # system is fixed for the process, however many of its chips the run opens.
        _write_text(path / CLUSTER_DESCRIPTOR_FILE, device_sim.cluster.cluster_descriptor_yaml())

        self._warner = LossWarner()
        # The model's threads append to the op log; a writer process writes SQLite (writer_process.py): the one
        # writer route (issue 32; a writer thread in this process cost the model ~3x the time an op, bench/README.md).
        sink = LogSink(path / OPLOG_DIR)
        self._queue = q = LogQueue(sink)
        self._writer = WriterProcess(path, config, self._lock_fd, ahead=self.fork_ahead)
        sink.writer_alive, sink.warner, self._writer.sink = self._writer.is_alive, self._warner, sink
        self._storage = TensorStore(path, q, self._warner)
        # A stored tensor's bytes go into the log and the writer process writes the file (log_tensors.py): no
        # tensor thread beside the model for it; the thread keeps the big ones.
        storage = LogStorage(sink, self._storage, path, pt=config.detach_saved_tensors)
        self.recorder = recorder = Recorder(config, q, storage)
        recorder.boundary = self._boundary
        sink._code = recorder.code  # for the CODE definitions of a stack (the recorder defines the rest)
        recorder.estimate = estimate_on_model_thread  # the writer process estimates the rest (log_perf)
        self._writer.start()  # first: a writer process forks while the tensor thread does not run yet
        if config.tensors != "none":  # nothing else queues a file: storing none, a capture starts no tensor thread
            self._storage.start()  # (its start was 4-9 ms of a warm start of ~45 on the loaded 2-core VM)
        for device in device_sim.open_devices():
            recorder.add_device(device, before_capture=True)
        if config.comparison != "off":
            recorder.golden = golden.make_checker(config, recorder)
        # Someone else's freeze (a pre-fork server) is left alone, and so is their unfreeze.
        self._froze = config.gc_freeze and gc.get_freeze_count() == 0
        if self._froze:
            gc.freeze()
        if config.perf_files:  # the perf rows of the committed ops, rendered while the model's thread waits
            writer = self._writer  # (its returncode, not is_alive(), which would reap it under join's feet)
            self._chase = ops_perf.Chase(self.db_path, sink.unwritten, lambda: sink.waiting,
                                         lambda: writer.returncode is None)
            _chases.add(self._chase)  # guarded at a fork until the close is over (stop, wait)
            sink.on_wait = self._chase.begin  # its thread starts at the model's first wait, or at the close
        device_sim.set_hook(recorder)

    def _install_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread may set handlers; the block's own exit still closes the report
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous = signal.getsignal(signum)
            if previous in (signal.SIG_IGN, None):
                continue  # ignored (or set outside Python): leave it so
            self._signals[signum] = previous
            signal.signal(signum, self._on_signal)
        self._unraisablehook = sys.unraisablehook
        sys.unraisablehook = self._on_unraisable

    def _on_unraisable(self, unraisable) -> None:
        """Python's report of an exception it could not raise (in a __del__, a weakref or gc callback, a
        generator closed by the collector): a KeyboardInterrupt there is a Ctrl-C that would be lost, and the
        model would run on. It is raised again at the next op's start (as _on_signal does for a __del__ it sees).
        """
        exc_type = unraisable.exc_type
        if exc_type is not None and issubclass(exc_type, KeyboardInterrupt) and os.getpid() == self._pid \
                and not self._stopped and self.recorder is not None:
            if self.recorder.deferred_signal is None:
                self.recorder.deferred_signal = (_raise_keyboard_interrupt, signal.SIGINT)
            return
        (self._unraisablehook or sys.__unraisablehook__)(unraisable)

    def _on_signal(self, signum, frame) -> None:
        previous = self._signals.get(signum, signal.SIG_DFL)
        if os.getpid() != self._pid:  # a forked child that kept the handler: act as it would have without us
            if callable(previous):
                previous(signum, frame)
                return
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        if callable(previous):
            # Chained: Python's SIGINT handler raises KeyboardInterrupt, and the with-block's exit closes.
            # Raised inside a finalizer (a tensor's __del__ frees its buffer), Python would print and
            # swallow it and the model would run on: then it is raised at the next op's start instead.
            if _in_finalizer(frame):
                self.recorder.deferred_signal = (previous, signum)
                return
            previous(signum, frame)
            return
        # The default action ends the process: close the report first, then end as the signal would.
        self.fork_ahead = False
        self.stop("interrupted", wait=True)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    def _at_exit(self) -> None:
        self.fork_ahead = False
        self.stop("complete", wait=True)  # in a forked child that exits, stop() does nothing (see _after_fork_in_child)

    def _forked_child(self) -> None:
        """In a child forked while this capture runs: let go of everything that belongs to the parent.

        The writer and tensor threads do not survive fork, so the child cannot record into the report;
        its ops are not recorded and the first one warns (once). Its copy of the folder lock is closed:
        the lock stays with the parent, and the child can start a capture of its own.
        """
        recorder = self.recorder
        if device_sim.get_hook() is recorder:
            device_sim.set_hook(_ForkedChildHook(self.path, self._pid))
        recorder.restore_devices()  # the parent's listeners would queue every buffer event, never drained
        with contextlib.suppress(ValueError, OSError):
            self._restore_signal_handlers()
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # never unlinks: the file is the parent's
            self._lock_fd = None

    # -- while running ---------------------------------------------------------------------
    def flush(self, timeout: float | None = 10.0) -> None:
        """Wait until everything recorded so far is committed (tensor files excepted)."""
        if self.recorder.golden is not None:
            self.recorder.golden.flush(timeout)  # golden checks run behind the ops: their rows come first
        token = self._writer.next_token()
        self._queue.put_now((FLUSH, token))
        self._writer.wait_flushed(token, timeout)

    def log_bytes_written(self) -> int:
        """Bytes of the op log the writer process has written into the report so far: what `ttreport run`'s progress
        line shows (an op is ~330 B of log), read from shared memory, so polling it costs the model nothing."""
        sink = self._writer.sink if self._writer is not None else None
        return sink.written() if sink is not None else 0

    # -- closing -------------------------------------------------------------------------
    def stop(self, status: str = "complete", *, wait: bool | None = None) -> None:
        """Close the capture with `status`. wait=False (default: the capture's wait_on_close) returns once the op
        log holds the closing notes and STOP: another capture may start, and wait() finishes this one's report."""
        global _active
        if os.getpid() != self._pid:
            return  # a forked child: the report belongs to the process that started the capture
        wait = self.wait_on_close if wait is None else wait
        with self._stop_lock:
            if self._stopped or self.recorder is None:
                if wait:
                    self.wait()  # stopped without waiting before (a signal, or atexit, after the block's end)
                return
            self._stopped = True
            held = self._hold_signals()
            try:
                if device_sim.get_hook() is self.recorder:
                    device_sim.set_hook(None)
                self.recorder.restore_devices()
                atexit.unregister(self._at_exit)
            finally:
                with _lock:
                    _active = None
                try:
                    self._drain(status)
                    if wait:
                        self.wait()
                finally:
                    if not self._unfinished:  # waited for, or the drain failed before STOP: the lock goes now
                        self._unlock()
                    self._restore_signal_handlers()
                if self._froze:
                    gc.unfreeze()
                self.status = status
                if self._unfinished:
                    atexit.register(self._wait_at_exit)  # a script that never calls wait() still gets its report
            for signum in held:  # a Ctrl-C (or SIGTERM) that came while the report closed: acted on now it is closed
                signal.raise_signal(signum)

    def wait(self) -> None:
        """Wait for the writer process of a capture stopped with wait=False to finish its report, then write the
        closing files (the perf files, a mesh's mapping) and let go of the folder. At once when there is nothing
        to wait for. What goes wrong is said as the waiting close says it: a warning, and the report's notes."""
        if os.getpid() != self._pid:
            return
        with self._stop_lock:
            if not self._unfinished:
                return
            self._unfinished = False
            atexit.unregister(self._wait_at_exit)
            with self._noting_signals() as noted:
                try:
                    self._finish()
                finally:
                    self._unlock()
        for signum in dict.fromkeys(noted):  # acted on now the report is whole, once each
            signal.raise_signal(signum)

    def _wait_at_exit(self) -> None:
        self.fork_ahead = False
        self.wait()

    @contextlib.contextmanager
    def _noting_signals(self):
        """While wait() finishes the report, a Ctrl-C or SIGTERM is noted and said in one line, then acted on once
        the report is whole, as stop()'s own close does (_hold_signals). Raised in the writer's join, it left the
        report without its perf files (the pytest plugin's end of session, which waits here); the wait is bounded:
        join kills a writer that makes no progress for oplog.WRITER_STALL_S."""
        noted: list[int] = []

        def note(signum, frame):
            if not noted:
                sys.stderr.write(f"ttreport: {signal.Signals(signum).name} noted: finishing the report {self.path} "
                                 f"first (its writer process's backlog), then stopping\n")
            noted.append(signum)

        swapped = {}
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                current = signal.getsignal(signum)
                if current not in (signal.SIG_IGN, None) and current != self._holder:  # (stop()'s close holds them)
                    swapped[signum] = current
                    signal.signal(signum, note)
        try:
            yield noted
        finally:
            for signum, previous in swapped.items():
                signal.signal(signum, previous)

    def _hold_signals(self) -> list[int]:
        """While the report closes, a Ctrl-C or SIGTERM is noted (in the list returned), not acted on: raised in
        the writer's join, it left the close half done (no perf files, the writer process orphaned) under a
        report that said complete, and a SIGTERM's stop() inside stop() ended the process before the db closed."""
        held: list[int] = []
        self._holder = lambda signum, frame: held.append(signum)
        if threading.current_thread() is threading.main_thread():
            for signum in self._signals:
                if signal.getsignal(signum) == self._on_signal:
                    signal.signal(signum, self._holder)
        return held

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            fd, self._lock_fd = self._lock_fd, None
            unlock(self.path, fd)

    def _restore_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for signum, previous in self._signals.items():
            if signal.getsignal(signum) in (self._on_signal, self._holder):
                signal.signal(signum, previous)
        if self._unraisablehook is not None and sys.unraisablehook == self._on_unraisable:
            sys.unraisablehook = self._unraisablehook  # (someone who replaced ours keeps theirs)

    def _drain(self, status: str) -> None:
        if self.recorder.golden is not None:
            self.recorder.golden.close()  # first: its rows and golden tensors go to the queues drained below
        if self._storage.ident is not None:  # started (config.tensors)
            self._storage.stop()
        notes = {"status": status, "ended_at": _now(), **self.recorder.notes()}
        if self._storage.files_lost:
            notes.update(tensor_files_lost=self._storage.files_lost, tensor_file_error=repr(self._storage.error))
        for key, value in notes.items():
            self._queue.put((META, key, value))
        self._queue.put_now((STOP, None))
        self._notes, self._unfinished = notes, True  # for _finish, now or in wait()

    def _finish(self) -> None:
        """The close after STOP: the writer process's end, then what the capture writes beside its db."""
        notes = self._notes
        started = time.perf_counter()
        chase = self._chase
        if self.fork_ahead and self._writer.is_alive():
            # while this process would wait for its writer below anyway (a writer that has ended: the next start forks)
            writer_process.fork_ahead()  # (_before_fork keeps its chase out of SQLite across the fork)
        if chase is not None:
            chase.closing()  # the model is done: it renders while the writer writes the rest
        self._writer.join()
        self.close_s["writer"] = time.perf_counter() - started
        self._queue.items.close()
        if self._rank and self._writer.error is None:
            rank.set_rank(self.db_path, self._rank)  # one UPDATE per table at close, nothing per op
        if self._writer.error is None and self.recorder.host_outputs:
            self._warn_host_ops()
        with contextlib.suppress(OSError):
            os.unlink(self.path / RESERVE_FILE)  # room for the notes below, if the disk is what failed
        if len(self.recorder.chips()) > 1:  # a mesh ran: where each chip sits (the visualizer's topology dialog)
            _write_text(self.path / MESH_MAPPING_FILE, device_sim.cluster.mesh_coordinate_mapping_yaml())
        if self._writer.error is not None:
            # The writer's connection failed; a fresh one may still get the notes in (or not: then warn).
            lost = {"records_lost": self._writer.records_lost, "ops_lost": self._writer.ops_lost,
                    "writer_error": repr(self._writer.error), **notes}
            try:
                _write_metadata(self.db_path, lost)
            except (sqlite3.Error, OSError) as e:
                self._warner.warn(f"ttreport: {self.db_path} could not be finalised ({e}); {lost}")
        elif self.config.perf_files:
            started = time.perf_counter()
            # a report rebuilt from the log (the writer process died) is another db: its rows are rendered anew
            self._write_perf_files(chase if self._writer.result is not None else None)
            self.close_s["perf_files"] = time.perf_counter() - started
        if chase is not None:
            chase.stop()
            _chases.discard(chase)

    def _warn_host_ops(self) -> None:
        """Warn once when compute ops ran on host tensors (a forgotten device=): else the report just shows no
        device time and 0 B of L1, with nothing to say why. Asked of the written report, so nothing per op."""
        try:
            with contextlib.closing(sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True)) as con:
                message = host_ops_warning(con)
        except sqlite3.Error:
            return  # the report's own close says what went wrong with it; this is only advice
        if message is not None:
            warnings.warn(message, UserWarning, stacklevel=user_stacklevel())

    def _write_perf_files(self, chase: ops_perf.Chase | None = None) -> None:
        """TT-NN's performance report files (ops_perf_results.csv, profile_log_device.csv) beside db.sqlite,
        from the committed db by the reading side's exporter: once, at close, never on the model's thread."""
        # Deferred past the capture start: the reading side (read.report and the exporters it loads) takes
        # 19-29 ms to import on top of this module, which a capture needs only at close.
        from ttreport.read.report import Report

        try:
            with Report(self.path) as r:
                ops_perf.export_ops_perf(r, self.path, chased=chase)
        except (sqlite3.Error, OSError) as e:  # the report itself is whole: say what is missing and how to get it
            warnings.warn(f"ttreport: the performance report files of {self.path} were not written ({e}); the "
                          f"report is complete: write them with `ttreport perf-csv {self.path}`",
                          ReportIncompleteWarning, stacklevel=2)

    def step(self) -> None:
        """One step of the model is done, as torch.profiler's prof.step(): the ops from here on carry the next
        step number (operations.step: how many times step() had been called when the op began). Every op is
        recorded whatever its step; the schedule given to capture() says which steps readers time. One integer
        increment, which the hook reads at each op's begin."""
        if self.recorder is not None:
            self.recorder.steps += 1

    # -- reading (as torch.profiler's prof.key_averages().table()) -------------------------------
    def table(self, *, sort_by: str = "host_time_total", row_limit: int | None = 100) -> str:
        """Report.table of this capture's report: ops by name, sorted by `sort_by`, as text."""
        with self._report() as r:
            return r.table(sort_by=sort_by, row_limit=row_limit)

    def summary(self):
        """Report.summary of this capture's report: time by op name, both memory peaks, golden, errors."""
        with self._report() as r:
            return r.summary()

    def _report(self):
        from ttreport.read.report import Report, ReportError  # deferred past the capture start, as above

        if self.path is None:
            raise ReportError(f"{self!r} has not started, so it has no report yet: read it after its `with` block")
        if not self._stopped:
            self.flush()  # a running capture's ops so far, committed
        self.wait()  # a capture stopped without waiting: its report once the writer process has finished it
        return Report(self.path)


class profile(contextlib.ContextDecorator):  # noqa: N801 (lower-case, as torch.profiler.profile)
    """`@ttreport.profile`, or `@ttreport.profile(name=..., config=...)`: each call of the function is
    captured into a report of its own.

    Without a name, each call gets a new report named after the function and the time. With one, each
    call gets the first free name of `name`, `name-2`, `name-3`, ...: a function called in a loop gets a
    report per call, and running the script again adds reports after the last run's, as torch.profiler's
    trace handler adds a trace file per step and run (never an error inside the model, never a report
    replaced). Config(overwrite=True) instead replaces `name`, `name-2`, ... run after run, call for call.
    The decorated function's `.profile.last` is the latest Capture (its `.path`, `.status`).
    """

    def __new__(cls, name=None, *, config: Config | None = None, schedule: Schedule | None = None):
        if callable(name) and not isinstance(name, (str, os.PathLike)):
            return cls()(name)  # used without parentheses: `name` is the function itself
        return super().__new__(cls)

    def __init__(self, name: str | os.PathLike | None = None, *, config: Config | None = None,
                 schedule: Schedule | None = None):
        self.name = name
        self.config = config
        self.schedule = schedule  # each call's capture keeps it; the function calls .profile.last.step()
        self.last: Capture | None = None
        self._base = "profile"

    def __call__(self, func):
        self._base = func.__name__
        wrapped = super().__call__(func)
        functools.update_wrapper(wrapped, func)
        wrapped.profile = self
        return wrapped

    def _recreate_cm(self):
        # The next call looks for a free name after the one the last call took (a loop never rescans them).
        taken = self.last.number if self.last is not None and self.last.number is not None else 0
        self.last = Capture(self.name, config=self.config, schedule=self.schedule, base_name=self._base,
                            number_from=None if self.name is None else taken + 1, fork_ahead=True)
        return self.last

    def __enter__(self) -> Capture:
        return self._recreate_cm().__enter__()

    def __exit__(self, *exc) -> bool:
        return self.last.__exit__(*exc)


class _ForkedChildHook:
    """device_sim's hook in a child forked during a capture: the first op warns that the child's ops
    are not recorded, and the hook removes itself (ops then run at full speed, unrecorded)."""

    def __init__(self, path: Path, parent_pid: int):
        self.message = (
            f"ttreport: ops run in process {os.getpid()}, forked during the capture into {path} (process "
            f"{parent_pid}), are not recorded: a capture's writer does not survive fork. To record them, start a "
            f"capture in the child, e.g. ttreport.capture(pathlib.Path('{path}-child-{os.getpid()}'))"
        )

    def begin(self, op, args, kwargs):
        if device_sim.get_hook() is self:
            device_sim.set_hook(None)
            warnings.warn(self.message, ReportIncompleteWarning, stacklevel=user_stacklevel())

    def end(self, token, output, exc):
        pass


# A fork while the perf-rows chase is inside SQLite (or a tensor thread inside torch.save) would give the child
# those libraries' mutexes held by a thread that does not exist there: its first SQLite call hangs. So a fork
# waits until none is (at most one range's read or one file), and they wait for the fork. A capture stopped with
# wait=False keeps its chase until wait() (it renders through the writer's backlog): every chase not stopped yet is
# in _chases, the active capture's and those still closing (the spare a waiting close forks, writer_process.Spare).
_held_for_fork: list[threading.Lock] = []
_chases: set[ops_perf.Chase] = set()


def _before_fork() -> None:
    active = _active
    busy = [chase.busy for chase in list(_chases)]  # (a copy: another thread's capture may add one meanwhile)
    if active is not None and active.recorder is not None and not active._stopped:
        busy.append(active._storage.busy)
    for lock in busy:
        lock.acquire()
        _held_for_fork.append(lock)


def _after_fork_in_parent() -> None:
    while _held_for_fork:
        _held_for_fork.pop().release()


def _after_fork_in_child() -> None:
    global _lock, _active
    _after_fork_in_parent()
    _chases.clear()  # the parent's threads: none runs here
    _lock = threading.Lock()  # another thread may have held it at the fork
    if _active is not None:
        active, _active = _active, None
        active._forked_child()


os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)


def capture(target: str | os.PathLike | None = None, *, config: Config | None = None,
            schedule: Schedule | None = None) -> Capture:
    """A capture into `<config.root>/<target>` (a plain name) or into `target` itself (a pathlib.Path, or
    a string that is clearly a path: absolute, or holding a separator).

    The folder must not hold a report already (Config(overwrite=True) replaces it). Without a
    target, a new name is made from the time. `schedule` (ttreport.schedule(wait=, warmup=, active=), as
    torch.profiler's): which of the steps the capture's step() counts are timed by readers; every op is recorded.
    """
    return Capture(target, config=config, schedule=schedule)


# -- helpers ----------------------------------------------------------------------------------
def _numbered(name, n: int):
    """`name` for the first call, `name-n` for the n-th (a plain name or a path alike)."""
    if name is None or n == 1:
        return name
    if isinstance(name, os.PathLike):
        path = Path(name)
        return path.with_name(f"{path.name}-{n}")
    return f"{name}-{n}"


def _opener():
    """The frame that opened the capture: the first one outside this module (with-block, start(), decorator)."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename == __file__:
        f = f.f_back
    return f


def _raise_keyboard_interrupt(signum, frame):
    raise KeyboardInterrupt


def _in_finalizer(frame, depth: int = 8) -> bool:
    """Whether `frame` runs inside a __del__ (within `depth` frames), where an exception is lost."""
    while frame is not None and depth:
        if frame.f_code.co_name == "__del__":
            return True
        frame, depth = frame.f_back, depth - 1
    return False


def _resolve(target, root: Path, base: str) -> Path:
    if target is None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path, n = root / f"{base}-{stamp}", 1
        while os.path.lexists(path):
            n += 1
            path = root / f"{base}-{stamp}-{n}"
        return path
    if isinstance(target, os.PathLike):
        return Path(target)
    if not isinstance(target, str):
        raise TypeError(f"capture() takes a report name (str) or a path (str or pathlib.Path), got "
                        f"{type(target).__name__} {target!r}")
    if os.path.isabs(target) or os.sep in target or (os.altsep and os.altsep in target):
        return Path(target)  # clearly a path ("/abs/run", "out/run"), used as given, like a pathlib.Path
    if target in ("", ".", ".."):
        raise ValueError(
            f"report name {target!r} must be a plain folder name inside Config.root ({root}), such as 'run-1'; "
            f"to write to a folder given by path, include a separator: ttreport.capture('./{target}/run-1')"
        )
    path, real = root / target, (root / target).resolve()
    if not real.is_relative_to(root.resolve()):
        raise ReportPathError(
            f"report name {target!r} leads out of Config.root ({root}): {path} is a symbolic link to {real}; "
            f"remove the link, or to write there on purpose pass the path itself: "
            f"ttreport.capture(pathlib.Path({str(real)!r}))"
        )
    return path


def _write_metadata(db_path, items: dict) -> None:
    con = sqlite3.connect(db_path)
    try:
        with con:
            con.executemany("INSERT OR REPLACE INTO report_metadata (key, value) VALUES (?, ?)",
                            [(k, str(v)) for k, v in items.items()])
    finally:
        con.close()


def _ttnn_config_keys(config: Config, path: Path) -> dict:
    """TT-NN's flat config.json keys (its ttnn.CONFIG dump) for what this capture records: the visualizer
    lists a report by `report_name`."""
    return {"report_name": path.name, "report_path": str(path), "root_report_path": str(config.root),
            "enable_logging": True, "enable_detailed_buffer_report": config.buffer_pages,
            "enable_detailed_tensor_report": config.tensors != "none",
            "enable_comparison_mode": config.comparison != "off", "comparison_mode_pcc": config.comparison_pcc,
            "comparison_mode_should_raise_exception": config.raise_on_mismatch}


def _write_json(path: Path, data: dict) -> None:
    _write_text(path, json.dumps(data, indent=2) + "\n")


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _git_commit() -> dict:
    """{"git_commit": sha} when the working directory is in a git checkout (a store's runs show it), else {}.

    Read from the checkout's files as `git rev-parse HEAD` finds it ($GIT_DIR or the nearest .git, a worktree's
    or submodule's `gitdir:` file; HEAD; the branch's ref, loose or in packed-refs, in the common dir of a
    worktree), not by running git: its process, forked from an interpreter holding torch, was 8 ms of a warm start
    of ~40 (issue 33's target is 30; bench/README.md, 12). A checkout git reads otherwise (reftable, an unborn
    branch) records no commit, as a folder outside git does.
    """
    try:
        git = _git_dir(Path.cwd())
        head = (git / "HEAD").read_text().strip() if git is not None else ""
        if head.startswith("ref: refs/"):
            head = _git_ref(git, head[5:])
    except (OSError, UnicodeDecodeError):
        return {}
    return {"git_commit": head} if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", head) else {}


def _git_dir(where: Path) -> Path | None:
    """The git folder of the checkout holding `where`, as git finds it ($GIT_DIR when set)."""
    if os.environ.get("GIT_DIR"):
        return Path(os.environ["GIT_DIR"])
    for folder in (where, *where.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return dot
        if dot.is_file():  # a worktree or a submodule: "gitdir: <its git folder>"
            text = dot.read_text().strip()
            return folder / text.removeprefix("gitdir: ") if text.startswith("gitdir: ") else None
    return None


def _git_ref(git: Path, ref: str) -> str:
    """The sha `ref` (refs/heads/main) names: its loose file, else its line in packed-refs; "" when neither."""
    common = git / (git / "commondir").read_text().strip() if (git / "commondir").is_file() else git
    for folder in (git, common):  # a worktree keeps its own refs (bisect's) and shares the branches
        if (folder / ref).is_file():
            return (folder / ref).read_text().strip()
    if (common / "packed-refs").is_file():
        with open(common / "packed-refs") as f:
            for line in f:  # "<sha> <ref>", "# pack-refs with: ...", "^<peeled sha>"
                sha, _, name = line.rstrip("\n").partition(" ")
                if name == ref:
                    return sha
    return ""


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


@functools.cache  # once a process: the code it runs keeps its version (reading the metadata was 5.6 ms a start)
def _version() -> str:
    try:
        return importlib_metadata.version("ttreport")
    except importlib_metadata.PackageNotFoundError:
        return "unknown"
