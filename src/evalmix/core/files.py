"""Writing the files a user names, so that a fault loses nothing.

Every file evalmix writes at a path the user chose (the report's page, tables and figures, a
figure's ``savefig``, the command line's ``--output`` and ``--plot``, the Inspect hook's JSON) goes
through :func:`atomic_write`: the content is written to a temporary file in the same folder, flushed
to disk, and only then moved over the target with :func:`os.replace`, which is atomic on POSIX and
Windows.  An interruption (an exception, Ctrl-C, a full disk, a killed process) leaves the previous
file as it was, and never a half-written one; the temporary file is removed.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["atomic_path", "atomic_write", "is_path", "write_bytes", "write_text", "write_with"]


def is_path(target: object) -> bool:
    """True for a file name (``str`` or ``os.PathLike``), False for an open file or buffer."""
    return isinstance(target, (str, os.PathLike))


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; moved over ``path`` when the block ends
    without an error, deleted otherwise.

    For writers that take a file name (``DataFrame.to_csv``, ``Figure.savefig``).  The temporary
    name keeps ``path``'s suffix, so that a writer choosing its format by the suffix still does.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "t.txt"
    >>> with atomic_path(target) as tmp:
    ...     _ = tmp.write_text("done")
    >>> target.read_text()
    'done'
    """
    target = Path(path)
    folder = target.parent
    try:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=f".tmp{target.suffix}", dir=folder)
    except OSError as exc:  # name the file the user asked for, not the temporary one
        raise type(exc)(exc.errno, exc.strerror, str(target)) from None
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        _keep_mode(target, tmp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _keep_mode(target: Path, tmp: Path) -> None:
    """Give the new file the old one's permissions (mkstemp makes it 0600), or the umask's."""
    try:
        mode = target.stat().st_mode & 0o7777
    except OSError:  # a new file: what open() would have made
        mode = 0o666 & ~_umask()
    with contextlib.suppress(OSError):
        os.chmod(tmp, mode)


def _umask() -> int:
    """The process's umask, read without changing it where the system tells it (Linux), since
    setting it, even for a moment, affects files other threads create meanwhile."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "w", encoding: str | None = "utf-8",
                 newline: str | None = None) -> Iterator[IO[Any]]:
    """``open(path, mode)`` that replaces ``path`` only once everything is written.

    Parameters
    ----------
    path : str or PathLike
        The file to write (its folder must exist).
    mode : {"w", "wb"}
        Text or bytes.
    encoding, newline : str, optional
        As for :func:`open` (text mode only).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "old.txt"
    >>> _ = target.write_text("old")
    >>> try:
    ...     with atomic_write(target) as fh:
    ...         _ = fh.write("new, half")
    ...         raise KeyboardInterrupt
    ... except KeyboardInterrupt:
    ...     pass
    >>> target.read_text()
    'old'
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    with atomic_path(path) as tmp:
        kwargs: dict[str, Any] = {} if mode == "wb" else {"encoding": encoding, "newline": newline}
        with open(tmp, mode, **kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())


def write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically (:func:`atomic_write`); returns the path.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> write_text(pathlib.Path(tempfile.mkdtemp()) / "a.md", "| a |").read_text()
    '| a |'
    """
    with atomic_write(path, "w", encoding=encoding) as fh:
        fh.write(text)
    return Path(path)


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (:func:`atomic_write`); returns the path."""
    with atomic_write(path, "wb") as fh:
        fh.write(data)
    return Path(path)


def write_with(path: str | os.PathLike[str], writer: Callable[[Path], Any]) -> Path:
    """Call ``writer(tmp)`` on a temporary path beside ``path``, then move it over ``path``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import pandas as pd
    >>> p = write_with(pathlib.Path(tempfile.mkdtemp()) / "t.csv",
    ...                lambda tmp: pd.DataFrame({"a": [1]}).to_csv(tmp, index=False))
    >>> p.read_text()
    'a\\n1\\n'
    """
    with atomic_path(path) as tmp:
        writer(tmp)
    return Path(path)
