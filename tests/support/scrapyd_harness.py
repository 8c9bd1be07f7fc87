"""A real, throwaway scrapyd for tests: start, deploy, schedule, poll, stop.

Everything lives in one directory the test owns: ``scrapyd.conf`` (loopback,
basic auth, small ``poll_interval``), ``eggs/``, ``logs/``, ``items/``, ``dbs/``
and scrapyd's own output ``scrapyd.out``. scrapyd is started *from* that
directory (it reads ``./scrapyd.conf`` and the closest ``scrapy.cfg`` from its
working directory), in its own process group, so ``stop()`` ends it
and every crawl process it launched, and reaps them.

``scrapyd-deploy`` writes ``setup.py``, ``build/`` and ``*.egg-info`` into the
project it builds, so ``copy_project`` makes a copy to deploy from
and the working tree stays clean. Every wait has a deadline.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROJECT = "traverse_crawl"
ROOT = Path(__file__).resolve().parents[2]

# Variables that would make a job import the working tree instead of the egg,
# pick another settings module, or route loopback traffic through a proxy.
_SCRUBBED_ENV = re.compile(
    r"^(PYTHONPATH|PYTHONHOME|SCRAPY_.*|SCRAPYD_.*|(HTTPS?|ALL|NO)_PROXY)$", re.IGNORECASE
)

# A log line at ERROR or CRITICAL level in Scrapy's default LOG_FORMAT.
ERROR_LINE = re.compile(r"^\S+ \S+ \[[^\]]*\] (ERROR|CRITICAL):")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not _SCRUBBED_ENV.match(k)}
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tool(name: str, module: str) -> list[str]:
    """The console script next to this interpreter, else ``python -m module``."""
    script = Path(sys.executable).with_name(name)
    return [str(script)] if script.exists() else [sys.executable, "-m", module]


def copy_project(dest: Path, src: Path = ROOT) -> Path:
    """Copy what a clean checkout would deploy: tracked and untracked, not ignored."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=src,
        capture_output=True,
        check=False,
    )
    if listed.returncode == 0:
        for name in filter(None, listed.stdout.decode("utf-8", "surrogateescape").split("\0")):
            path = src / name
            if path.is_file():
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, dest / name)
    else:  # not a git checkout (e.g. an unpacked sdist)
        junk = shutil.ignore_patterns(
            ".git", ".venv", "build", "dist", "*.egg-info", "setup.py", ".traverse", "__pycache__"
        )
        shutil.copytree(src, dest, ignore=junk, dirs_exist_ok=True)
    return dest


@dataclass
class Scrapyd:
    home: Path
    port: int
    username: str
    password: str
    process: subprocess.Popen[bytes] | None = None
    deployed: dict[str, Any] = field(default_factory=dict)  # addversion.json's answer
    deployed_from: Path | None = None  # the project copy the egg was built from

    # -- life cycle -----------------------------------------------------------

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def write_config(self) -> None:
        for name in ("eggs", "logs", "items", "dbs"):
            (self.home / name).mkdir(parents=True, exist_ok=True)
        (self.home / "scrapyd.conf").write_text(
            "[scrapyd]\n"
            "bind_address = 127.0.0.1\n"
            f"http_port = {self.port}\n"
            f"username = {self.username}\n"
            f"password = {self.password}\n"
            f"eggs_dir = {self.home / 'eggs'}\n"
            f"logs_dir = {self.home / 'logs'}\n"
            f"items_dir = {self.home / 'items'}\n"
            f"dbs_dir = {self.home / 'dbs'}\n"
            "jobs_dir =\n"
            "jobs_to_keep = 50\n"
            "max_proc = 2\n"
            "poll_interval = 0.2\n",
            encoding="utf-8",
        )

    def start(self, timeout: float = 30.0, attempts: int = 3) -> None:
        """Start and wait for ``daemonstatus.json``; a port taken meanwhile gets a new one."""
        for attempt in range(attempts):
            if attempt:
                self.port = free_port()
            self.write_config()
            # HOME points into the throwaway directory so no ~/.scrapyd.conf applies.
            with open(self.home / "scrapyd.out", "ab") as out:
                self.process = subprocess.Popen(
                    [*tool("scrapyd", "scrapyd"), "--pidfile="],
                    cwd=self.home,
                    env=clean_env(HOME=str(self.home)),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group: stop() reaches the jobs
                )
            if self._ready(self.process, timeout):
                return
            self.stop()
            if "Address already in use" not in self.output():
                break
        raise RuntimeError(f"scrapyd did not start on {self.origin}:\n{self.output()}")

    def _ready(self, process: subprocess.Popen[bytes], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if self.get("daemonstatus.json").get("status") == "ok":
                    return True
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        return False

    def stop(self, timeout: float = 10.0) -> None:
        process = self.process
        if process is None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                process.wait(timeout)
                break
            except subprocess.TimeoutExpired:
                continue
        # Crawl processes are scrapyd's children in its group; make sure none survives.
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout)
        self.process = None

    def output(self, tail: int = 60) -> str:
        path = self.home / "scrapyd.out"
        if not path.exists():
            return ""
        return "\n".join(path.read_text("utf-8", "replace").splitlines()[-tail:])

    # -- HTTP API -------------------------------------------------------------

    def _request(
        self, path: str, data: list[tuple[str, str]] | None = None, auth: bool = True
    ) -> tuple[int, bytes]:
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        request = urllib.request.Request(f"{self.origin}/{path.lstrip('/')}", data=body)
        if auth:
            token = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        # No proxy, whatever the environment says: this is loopback only.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=10) as response:
                return int(response.status), response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def get(self, path: str, auth: bool = True, **params: str) -> dict[str, Any]:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        status, body = self._request(path + query, auth=auth)
        if status != 200:
            raise OSError(f"GET {path}: HTTP {status}: {body[:200]!r}")
        result: dict[str, Any] = json.loads(body)
        return result

    def status_code(self, path: str, auth: bool) -> int:
        return self._request(path, auth=auth)[0]

    def text(self, path: str) -> str:
        status, body = self._request(path)
        if status != 200:
            raise OSError(f"GET {path}: HTTP {status}")
        return body.decode("utf-8", "replace")

    def schedule(
        self,
        spider: str,
        args: dict[str, str],
        settings: dict[str, str],
        jobid: str | None = None,
    ) -> str:
        """``schedule.json`` as an operator calls it: ``-d name=value -d setting=NAME=VALUE``."""
        data = [("project", PROJECT), ("spider", spider)]
        if jobid is not None:
            data.append(("jobid", jobid))
        data += [(name, value) for name, value in args.items()]
        data += [("setting", f"{name}={value}") for name, value in settings.items()]
        status, body = self._request("schedule.json", data)
        answer = json.loads(body)
        if status != 200 or answer.get("status") != "ok":
            raise AssertionError(f"schedule.json refused ({status}): {answer}")
        return str(answer["jobid"])

    def wait(self, jobid: str, timeout: float = 60.0) -> dict[str, Any]:
        """Poll until the job is finished; return its ``listjobs.json`` entry."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.get("status.json", job=jobid).get("currstate") == "finished":
                for job in self.get("listjobs.json", project=PROJECT)["finished"]:
                    if job["id"] == jobid:
                        return dict(job)
            time.sleep(0.2)
        self._request("cancel.json", [("project", PROJECT), ("job", jobid)])
        raise AssertionError(
            f"job {jobid} not finished after {timeout} s\n{self.job_log(jobid)}\n{self.output()}"
        )

    def job_log(self, jobid: str, spider: str = "traverse") -> str:
        path = self.home / "logs" / PROJECT / spider / f"{jobid}.log"
        return path.read_text("utf-8", "replace") if path.exists() else f"(no log at {path})"

    def job_items(self, jobid: str, spider: str = "traverse") -> list[dict[str, Any]]:
        path = self.home / "items" / PROJECT / spider / f"{jobid}.jl"
        if not path.exists():
            return []
        lines = path.read_text("utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    # -- deploy ---------------------------------------------------------------

    def deploy(self, project_dir: Path, version: str, timeout: float = 120.0) -> dict[str, Any]:
        """``scrapyd-deploy pytest -v VERSION`` from ``project_dir``, a throwaway copy.

        The target is appended to the copy's scrapy.cfg; its credentials come from
        the environment through scrapyd-client's ``${VAR}`` interpolation, the way
        docs/scrapyd.md recommends.
        """
        with open(project_dir / "scrapy.cfg", "a", encoding="utf-8") as cfg:
            cfg.write(
                "\n[deploy:pytest]\n"
                f"url = {self.origin}\n"
                f"project = {PROJECT}\n"
                "username = ${SCRAPYD_USERNAME}\n"
                "password = ${SCRAPYD_PASSWORD}\n"
            )
        done = subprocess.run(
            [*tool("scrapyd-deploy", "scrapyd_client.deploy"), "pytest", "-v", version],
            cwd=project_dir,
            env=clean_env(SCRAPYD_USERNAME=self.username, SCRAPYD_PASSWORD=self.password),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        out, err = done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
        if done.returncode != 0:
            raise AssertionError(f"scrapyd-deploy failed ({done.returncode}):\n{out}\n{err}")
        self.deployed = json.loads(out.strip().splitlines()[-1])
        self.deployed_from = project_dir
        # scrapyd-deploy exits 0 even when scrapyd could not load the egg.
        if self.deployed.get("status") != "ok":
            raise AssertionError(f"scrapyd refused the egg:\n{self.deployed}\n{err}")
        return self.deployed

    def egg_path(self, version: str) -> Path:
        return self.home / "eggs" / PROJECT / f"{version}.egg"


def error_lines(log: str) -> list[str]:
    """ERROR/CRITICAL log lines and Traceback lines: what an operator would grep for."""
    return [line for line in log.splitlines() if ERROR_LINE.match(line) or "Traceback" in line]
