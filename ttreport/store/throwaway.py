"""A throwaway PostgreSQL cluster for the store's tests and benchmark: initdb + pg_ctl, on a unix socket only.

Debian's postgresql package (what .ci/run installs) puts initdb under /usr/lib/postgresql/N/bin.
PostgreSQL refuses to run as root, so as root the cluster runs as the `postgres` user the package
creates (runuser), in a folder it owns; clients connect over the socket as the `postgres` role
with trust authentication, which only this machine's users can reach. No binaries, no psycopg, or
root without a `postgres` user: start() raises Unavailable, whose message the tests skip with.

    from ttreport.store import throwaway
    cluster = throwaway.start()   # then cluster.new_database() (a URL), and cluster.stop()
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path


class Unavailable(Exception):
    """No PostgreSQL server can be started here; the message says why."""


def _bindir() -> Path:
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).parent
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[-3]))
    if not found:
        raise Unavailable("no PostgreSQL server binaries (initdb): apt-get install postgresql, as .ci/run does")
    return Path(found[-1]).parent


class Cluster:
    def __init__(self):
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise Unavailable("psycopg is not installed: pip install 'psycopg[binary]'") from None
        self.bindir = _bindir()
        self.user = None
        if os.geteuid() == 0:
            try:
                self.user = pwd.getpwnam("postgres")
            except KeyError:
                raise Unavailable("running as root and no `postgres` user to run the server as") from None
        self.runuser = None
        if self.user:
            found = shutil.which("runuser") or next((p for p in ("/usr/sbin/runuser", "/sbin/runuser")
                                                     if os.path.exists(p)), None)
            if found is None:
                raise Unavailable("running as root and no runuser to start the server as the `postgres` user")
            self.runuser = found
        # A short path (a unix socket's path must stay under ~100 bytes); as root, in /tmp itself, which
        # the `postgres` user can reach (a root-only TMPDIR would keep it out).
        self.dir = Path(tempfile.mkdtemp(prefix="ttpg-", dir="/tmp" if self.user else None))
        if self.user:
            os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        self._run("initdb", "-D", str(self.dir / "data"), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-l", str(self.dir / "log"), "-w", "-t", "60", "-o",
                  f"-k {self.dir} -c listen_addresses='' -F -c max_connections=60", "start")
        self._n = 0

    def _run(self, tool: str, *args: str) -> None:
        cmd = [str(self.bindir / tool), *args]
        if self.user:
            cmd = [self.runuser, "-u", "postgres", "--", *cmd]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if out.returncode:
            raise Unavailable(f"{tool} failed ({out.returncode}): {out.stderr.strip()[-500:]}")

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@/{dbname}?host={self.dir}"

    def new_database(self) -> str:
        """A fresh empty database's URL."""
        import psycopg

        self._n += 1
        name = f"t{self._n}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def start() -> Cluster:
    return Cluster()
