"""The SQLite store's worker thread: the one connection, and the jobs run on it.

One sqlite3 connection lives on one dedicated thread and every call of the store
runs its SQL there, in submission order, so this process's writes are serialized
and never meet "database is locked". The worker commits whatever queued up while
it was busy in one transaction (group commit), because on small machines a commit
and a thread round trip each cost more than the SQL itself. A store reads tasks
on a second worker, so that a read never waits behind a large write (in WAL
mode a reader sees the last commit without waiting for the writer).
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from .sqlite_schema import connect

__all__ = ["PendingWrites", "Worker"]

T = TypeVar("T")

_MAX_BATCH = 256  # jobs per transaction, so one batch cannot hold the lock for long


class _Job(NamedTuple):
    run: Callable[[sqlite3.Connection], Any] | None  # None: close the connection and stop
    write: bool
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]
    ran: asyncio.Future[None] | None = None  # set once the job ran, whoever still waits


class _Outcome(NamedTuple):
    job: _Job
    ok: bool
    value: Any  # the result, or the exception raised


class Worker:
    """The thread that owns the connection and runs jobs on it in submission order.

    It takes every job queued while it was busy as one batch (group commit): one
    transaction per batch, each write job in its own savepoint so that a job that
    raises undoes only itself, and results handed back after the COMMIT in one
    wake-up of the caller's event loop. Under load, N commits and N thread round
    trips become one of each; alone, a job is a batch of one.
    """

    def __init__(self, path: str, name: str = "a2ad-sqlite") -> None:
        self._path = path
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.writing = 0  # writes submitted whose answer has not reached their loop yet
        # A daemon, so that a store nobody closed cannot hang interpreter exit; its
        # unfinished batch then dies uncommitted, and no caller saw those results.
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)

    def submit(
        self,
        run: Callable[[sqlite3.Connection], T],
        write: bool,
        ran: asyncio.Future[None] | None = None,
    ) -> asyncio.Future[T]:
        """The job's result (cancelling it leaves the job to run); ``ran``, if
        given, is set once the job ran, even for a caller who left."""
        if self._thread.ident is None:
            self._thread.start()  # the first call opens the store
        elif not self._thread.is_alive():
            raise RuntimeError("the SQLite worker thread has ended")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs.put(_Job(run, write, loop, future, ran))
        self.writing += write
        return future

    async def stop(self) -> None:
        if self._thread.ident is None:
            return  # never started: no connection, and the file was never touched
        loop = asyncio.get_running_loop()
        stopped: asyncio.Future[None] = loop.create_future()
        # Queued behind every call already made, which so finish first. If this
        # await is cancelled, the worker still closes the connection and ends.
        self._jobs.put(_Job(None, False, loop, stopped))
        await stopped
        self._thread.join()  # it has only to return

    def _settle(self, outcomes: list[_Outcome]) -> None:
        self.writing -= sum(outcome.job.write for outcome in outcomes)
        _settle(outcomes)

    def _main(self) -> None:
        conn: sqlite3.Connection | None = None
        while True:
            jobs = [self._jobs.get()]
            while len(jobs) < _MAX_BATCH:
                try:
                    jobs.append(self._jobs.get_nowait())
                except queue.Empty:
                    break
            stop = jobs.pop() if jobs[-1].run is None else None  # always the last job
            outcomes: list[_Outcome] = []
            if jobs:
                try:
                    if conn is None:
                        conn = connect(self._path)
                    outcomes = _run_batch(conn, jobs)
                except Exception as exc:
                    outcomes = [_Outcome(job, False, exc) for job in jobs]
            if stop is not None:
                if conn is not None:
                    conn.close()
                outcomes.append(_Outcome(stop, True, None))
            _deliver(outcomes, self._settle)
            if stop is not None:
                return


def _run_batch(conn: sqlite3.Connection, jobs: list[_Job]) -> list[_Outcome]:
    # Reads share the transaction too: a list's count and page see one snapshot,
    # and the batch takes one read lock instead of one per statement.
    conn.execute("BEGIN IMMEDIATE" if any(job.write for job in jobs) else "BEGIN")
    outcomes: list[_Outcome] = []
    try:
        for job in jobs:
            assert job.run is not None
            if job.write:
                conn.execute("SAVEPOINT job")
            try:
                result = job.run(conn)
            except Exception as exc:
                if not conn.in_transaction:
                    raise  # SQLite rolled back the whole batch (disk full, I/O error)
                if job.write:
                    conn.execute("ROLLBACK TO job")
                    conn.execute("RELEASE job")
                outcomes.append(_Outcome(job, False, exc))
            else:
                if job.write:
                    conn.execute("RELEASE job")
                outcomes.append(_Outcome(job, True, result))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return outcomes


def _deliver(outcomes: list[_Outcome], settle: Callable[[list[_Outcome]], None]) -> None:
    by_loop: dict[asyncio.AbstractEventLoop, list[_Outcome]] = {}
    for outcome in outcomes:
        by_loop.setdefault(outcome.job.loop, []).append(outcome)
    for loop, settled in by_loop.items():
        try:
            loop.call_soon_threadsafe(settle, settled)
        except RuntimeError:
            pass  # that loop is closed: nobody waits for these any more


def _settle(outcomes: list[_Outcome]) -> None:
    for job, ok, value in outcomes:
        if job.ran is not None and not job.ran.done():
            job.ran.set_result(None)
        if job.future.cancelled():
            continue  # its caller left; the job ran all the same
        if ok:
            job.future.set_result(value)
        else:
            job.future.set_exception(value)


class PendingWrites:
    """The writes submitted to the writing worker that have not finished, so that
    a read on the reading worker still sees every write this process submitted
    before it (as when both shared one queue), without waiting for others': a
    read of a task waits for the earlier writes of that task, a listing for
    every earlier write. A write goes on when its caller is cancelled, and a
    read after it waits for it all the same."""

    def __init__(self) -> None:
        self._last: asyncio.Future[None] | None = None
        self._of_task: dict[str, asyncio.Future[None]] = {}

    def add(self, task_id: str) -> asyncio.Future[None]:
        """A write of ``task_id`` ("": of no one task) is submitted: the future
        to hand the worker as its ``ran``."""
        ran: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._last = ran
        if task_id:
            self._of_task[task_id] = ran
            ran.add_done_callback(lambda done: self._forget(task_id, done))
        return ran

    def _forget(self, task_id: str, done: asyncio.Future[None]) -> None:
        if self._of_task.get(task_id) is done:
            del self._of_task[task_id]

    async def settled(self, task_id: str | None) -> None:
        """Once the earlier writes of ``task_id`` (None: of every task) are done."""
        future = self._last if task_id is None else self._of_task.get(task_id)
        if future is None or future.done() or future.get_loop() is not asyncio.get_running_loop():
            return
        await asyncio.shield(future)  # not cancelled with the reader: others wait for it too
