"""The benchmark site: a deterministic synthetic site and an nginx that serves it.

Run ``python bench/site.py DIR`` to generate a site and serve it until Ctrl-C.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import deque
from dataclasses import dataclass
from pathlib import Path

SITE_VERSION = 1  # bump when the generator's output changes
DEFAULT_SEED = 20240611
DEFAULT_PAGES = 2000
DEFAULT_PAGE_BYTES = 22_000
CHILDREN = 4
OFFSITE = "https://offsite.example/"

INSTALL_HINT = (
    "nginx is required by the benchmark and was not found on PATH or in /usr/sbin.\n"
    "Install it with:  apt-get install -y nginx-light   (or: apt-get install -y nginx)"
)


# -- generation --------------------------------------------------------------


def page_path(index: int) -> str:
    return "/index.html" if index == 0 else f"/pages/p{index:04d}.html"


def _href(rng: random.Random, source: int, target: int) -> str:
    """One of three spellings of the link from page ``source`` to page ``target``."""
    path = page_path(target)
    style = rng.randrange(3)
    if style == 0 or source == 0:
        href = path  # absolute path
    elif style == 1:
        href = path.rsplit("/", 1)[1] if target else "../index.html"  # relative
    else:
        href = ".." + path  # dot segment
    if rng.random() < 0.15:
        href += f"#s{rng.randrange(9)}"  # same page with a fragment: one URL, not two
    return href


def _vocabulary(rng: random.Random) -> list[str]:
    syllables = ["ka", "lo", "mi", "ner", "sta", "vu", "qui", "dor", "fen", "tal", "zo", "pri"]
    words = {"".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(900)}
    # A few non-ASCII words so the crawlers decode real UTF-8.
    return [*sorted(words), "café", "naïve", "Grüße", "façade", "smörgåsbord", "niño"]


def _paragraph(rng: random.Random, vocab: list[str], links: list[str]) -> str:
    words = [rng.choice(vocab) for _ in range(rng.randint(60, 140))]
    for href in links:
        at = rng.randrange(len(words))
        words[at] = f'<a href="{href}">{words[at]}</a>'
    return "<p>" + " ".join(words).capitalize() + ".</p>"


def _page(
    rng: random.Random, vocab: list[str], index: int, pages: int, extra: int, size: int
) -> tuple[bytes, list[int]]:
    children = [
        c for c in range(CHILDREN * index + 1, CHILDREN * index + CHILDREN + 1) if c < pages
    ]
    others = [rng.randrange(pages) for _ in range(extra)]
    targets = children + others + [0]
    hrefs = [_href(rng, index, t) for t in targets]
    title = f"Page {index} · {rng.choice(vocab)} {rng.choice(vocab)}"
    head = (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>{title}</title>"
        '<meta name=viewport content="width=device-width">'
        "<style>body{font-family:sans-serif;max-width:40em}nav a{margin-right:1em}</style>"
        "</head>\n<body><header><h1>"
        + title
        + "</h1><nav>"
        + "".join(f'<a href="{h}">item {n}</a>' for n, h in enumerate(hrefs[: len(children)]))
        + f'<a href="{OFFSITE}p{index}">elsewhere</a></nav></header>\n<main>'
    )
    tail = (
        "</main>\n<footer><p>Synthetic page for traverse_crawl benchmarks.</p></footer>"
        "</body></html>\n"
    )
    body: list[str] = []
    inline = hrefs[len(children) :]
    length = len(head.encode()) + len(tail.encode())
    while length < size:
        take, inline = inline[:2], inline[2:]
        para = _paragraph(rng, vocab, take) + "\n"
        body.append(para)
        length += len(para.encode())
    for href in inline:  # a page shorter than its links still carries them all
        body.append(f'<p><a href="{href}">more</a></p>\n')
    return (head + "".join(body) + tail).encode("utf-8"), targets


def bfs_depth(links: dict[int, list[int]]) -> tuple[int, int]:
    """(pages reached from page 0, greatest BFS depth among them)."""
    depth = {0: 0}
    queue = deque([0])
    while queue:
        page = queue.popleft()
        for target in links[page]:
            if target not in depth:
                depth[target] = depth[page] + 1
                queue.append(target)
    return len(depth), max(depth.values())


@dataclass(frozen=True)
class SiteInfo:
    root: Path
    pages: int
    page_bytes: int
    seed: int
    max_depth: int
    total_bytes: int
    digest: str

    def to_dict(self) -> dict[str, object]:
        return {
            "root": str(self.root),
            "pages": self.pages,
            "mean_page_bytes": round(self.total_bytes / self.pages),
            "target_page_bytes": self.page_bytes,
            "seed": self.seed,
            "bfs_max_depth": self.max_depth,
            "total_bytes": self.total_bytes,
            "digest": self.digest,
            "version": SITE_VERSION,
        }


# ``generate(root)`` writes ``pages`` HTML pages of about ``page_bytes`` bytes each
# (``/index.html`` is page 0, the others ``/pages/pNNNN.html``) and a permissive
# ``/robots.txt``. Page ``i`` links to its children ``4i+1 .. 4i+4`` (so a BFS from
# ``/index.html`` reaches every page, within depth ``ceil(log4(3·pages+1)) - 1``),
# to ``extra_links`` pseudo-random pages, back to the index, and to one off-site
# URL that every spider must skip. Hrefs come in three spellings (relative,
# absolute-path, ``../``) and some carry a fragment, so the link extraction and
# URL resolution of the crawlers are exercised, not bypassed. Everything is drawn
# from ``random.Random(seed)``: the same arguments give byte-identical files, and
# ``digest`` in ``site.json`` says so.
def generate(
    root: Path,
    pages: int = DEFAULT_PAGES,
    page_bytes: int = DEFAULT_PAGE_BYTES,
    seed: int = DEFAULT_SEED,
    extra_links: int = 6,
) -> SiteInfo:
    """Write the site under ``root`` (reused as is when ``site.json`` matches)."""
    meta_path = root / "site.json"
    wanted = {
        "pages": pages,
        "target_page_bytes": page_bytes,
        "seed": seed,
        "version": SITE_VERSION,
    }
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if all(meta.get(k) == v for k, v in wanted.items()):
            return SiteInfo(
                root,
                pages,
                page_bytes,
                seed,
                meta["bfs_max_depth"],
                meta["total_bytes"],
                meta["digest"],
            )
    rng = random.Random(seed)
    vocab = _vocabulary(rng)
    (root / "pages").mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    total = 0
    links: dict[int, list[int]] = {}
    for index in range(pages):
        data, links[index] = _page(rng, vocab, index, pages, extra_links, page_bytes)
        (root / page_path(index).lstrip("/")).write_bytes(data)
        digest.update(data)
        total += len(data)
    robots = b"User-agent: *\nAllow: /\n"
    (root / "robots.txt").write_bytes(robots)
    reached, depth = bfs_depth(links)
    if reached != pages:
        raise RuntimeError(f"generator bug: BFS reaches {reached} of {pages} pages")
    info = SiteInfo(root, pages, page_bytes, seed, depth, total, digest.hexdigest())
    meta_path.write_text(json.dumps(info.to_dict(), indent=2))
    return info


def tree_depth_bound(pages: int) -> int:
    """Depth within which the 4-ary tree alone reaches every page."""
    return max(0, math.ceil(math.log(3 * pages + 1, CHILDREN)) - 1)


# -- nginx -------------------------------------------------------------------


def find_nginx() -> str | None:
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Hit:
    end: float  # seconds since the epoch, ms resolution, when the response was sent
    duration: float  # $request_time, seconds
    status: int
    size: int
    uri: str

    @property
    def start(self) -> float:
        return self.end - self.duration


def _die_with_parent() -> None:
    """In the child: receive SIGTERM when the bench process dies, however it dies."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


# ``Nginx(root)`` runs Debian's nginx in the foreground (``daemon off``) with a
# throwaway configuration in a temporary directory, on a free 127.0.0.1 port,
# with an access log that records, per request, the time it ended (``$msec``),
# its duration (``$request_time``), the status, the bytes sent and the URI. There
# is no fallback server: without nginx the bench stops and says how to install it.
class Nginx:
    """A foreground nginx serving ``root`` on 127.0.0.1 until ``stop()``."""

    def __init__(self, root: Path) -> None:
        binary = find_nginx()
        if binary is None:
            raise SystemExit(INSTALL_HINT)
        self.binary = binary
        self.root = root.resolve()
        self.tmp = Path(tempfile.mkdtemp(prefix="traverse-bench-nginx-"))
        self.port = free_port()
        self.origin = f"http://127.0.0.1:{self.port}"
        self.access_log = self.tmp / "access.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def _config(self) -> str:
        t = self.tmp
        # As root, nginx's workers would drop to "nobody", who may not read a
        # 0700 temp dir: keep them as the invoking user.
        user = "user root root;\n" if os.geteuid() == 0 else ""
        # worker_rlimit_nofile: the scale bench serves 100,000 files.
        return f"""{user}worker_processes 1;
worker_rlimit_nofile 65536;
daemon off;
pid {t}/nginx.pid;
error_log {t}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    types {{ text/html html; text/plain txt; application/json json; }}
    default_type application/octet-stream;
    charset utf-8;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 65;
    keepalive_requests 100000;
    log_format bench '$msec $request_time $status $body_bytes_sent $request_uri';
    access_log {t}/access.log bench;
    client_body_temp_path {t}/client_body;
    proxy_temp_path {t}/proxy;
    fastcgi_temp_path {t}/fastcgi;
    uwsgi_temp_path {t}/uwsgi;
    scgi_temp_path {t}/scgi;
    server {{
        listen 127.0.0.1:{self.port};
        root {self.root};
        index index.html;
    }}
}}
"""

    def start(self) -> Nginx:
        conf = self.tmp / "nginx.conf"
        conf.write_text(self._config())
        self.proc = subprocess.Popen(
            [self.binary, "-p", str(self.tmp), "-c", str(conf), "-e", str(self.tmp / "error.log")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=_die_with_parent,  # no orphaned nginx after a kill -9 of the bench
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise SystemExit(f"nginx exited at start-up ({self.proc.returncode}): {err}")
            try:
                with urllib.request.urlopen(self.origin + "/robots.txt", timeout=1) as resp:
                    if resp.status == 200:
                        return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise SystemExit("nginx did not answer within 10 s")

    def log_offset(self) -> int:
        return self.access_log.stat().st_size if self.access_log.exists() else 0

    def hits(self, since: int = 0) -> list[Hit]:
        """Requests logged after byte ``since`` of the access log."""
        if not self.access_log.exists():
            return []
        with self.access_log.open("rb") as fh:
            fh.seek(since)
            lines = fh.read().decode("utf-8", "replace").splitlines()
        out = []
        for line in lines:
            end, duration, status, size, uri = line.split(" ", 4)
            out.append(Hit(float(end), float(duration), int(status), int(size), uri))
        return out

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)  # graceful: workers finish, then exit
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.proc.stderr is not None:
            self.proc.stderr.close()
        self.proc = None

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> Nginx:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--pages", type=int, default=DEFAULT_PAGES)
    parser.add_argument("--page-bytes", type=int, default=DEFAULT_PAGE_BYTES)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--no-serve", action="store_true", help="generate only")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the cleanup
    info = generate(args.root, args.pages, args.page_bytes, args.seed)
    print(json.dumps(info.to_dict(), indent=2))
    if args.no_serve:
        return
    with Nginx(args.root) as server:
        print(f"serving {info.root} at {server.origin}/index.html (Ctrl-C to stop)", flush=True)
        try:
            while server.proc is not None and server.proc.poll() is None:
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
    sys.exit(0)


if __name__ == "__main__":
    main()
