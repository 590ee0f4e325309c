"""ZIP, gzip and tar archives, opened recursively under a shared budget.

Declared sizes in an archive are attacker-controlled, so the budget is enforced while decompressing:
a member is read in chunks and abandoned the moment it exceeds its ratio or the file's total budget.
"""

from __future__ import annotations

import io
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from .base import LimitExceeded, Limits, ReadError, ReadResult

_CHUNK = 1 << 16
# Tiny members compress absurdly well (a 100 KB run of zeros is legal and harmless); ratios only
# matter once the expanded size is large enough to hurt.
_RATIO_FLOOR = 1 << 20


@dataclass
class Budget:
    """What one file's reading has spent of its ``Limits`` so far, shared by every archive inside it."""

    limits: Limits
    used: int = 0
    members: int = 0

    def take(self, n: int) -> None:
        """Count ``n`` more uncompressed bytes; ``LimitExceeded`` once the file's total is over its limit."""
        self.used += n
        if self.used > self.limits.max_total_bytes:
            raise LimitExceeded(f"total uncompressed size exceeds {self.limits.max_total_bytes} bytes")

    def count_member(self) -> None:
        """Count one more archive member; ``LimitExceeded`` past ``max_members``."""
        self.members += 1
        if self.members > self.limits.max_members:
            raise LimitExceeded(f"more than {self.limits.max_members} archive members")


def _check_ratio(expanded: int, compressed: int, limits: Limits) -> None:
    if expanded > _RATIO_FLOOR and expanded > limits.max_ratio * max(compressed, 1):
        raise LimitExceeded(
            f"compression ratio above {limits.max_ratio:g} ({expanded} bytes from {compressed}): zip bomb?"
        )


def _read_stream(stream, compressed: int, budget: Budget) -> bytes:
    out = bytearray()
    while True:
        chunk = stream.read(_CHUNK)
        if not chunk:
            return bytes(out)
        out += chunk
        budget.take(len(chunk))
        _check_ratio(len(out), compressed, budget.limits)


# read(data, name, member, depth, budget) -> ReadResult: the dispatcher, passed in to avoid an import
# cycle. ``name`` is what the bytes were called (for the extension), ``member`` their path for provenance.
Reader = Callable[[bytes, str, str, int, Budget], ReadResult]


def _join(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


def read_zip(data: bytes, name: str, prefix: str, depth: int, budget: Budget, read: Reader) -> ReadResult:
    """Every file member of a ZIP archive through ``read``, at ``depth`` + 1, named ``prefix/member``.

    A member over the ratio or budget, encrypted or damaged is recorded as a ``ReadError`` and skipped;
    once the file's whole budget is spent, the members left are not read. Never raises for bad input.
    """
    result = ReadResult()
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError) as exc:
        return ReadResult(errors=[ReadError(prefix, f"bad zip: {exc}", "zip")])
    with zf:
        for info in zf.infolist():
            if info.is_dir():
                continue
            member = _join(prefix, info.filename)
            try:
                budget.count_member()
                _check_ratio(info.file_size, info.compress_size, budget.limits)  # cheap early refusal
                with zf.open(info) as stream:
                    content = _read_stream(stream, info.compress_size, budget)
            except LimitExceeded as exc:
                result.errors.append(ReadError(member, str(exc), "zip"))
                if budget.used > budget.limits.max_total_bytes or budget.members > budget.limits.max_members:
                    break  # the file's budget is spent: later members would fail the same way
                continue
            except (zipfile.BadZipFile, RuntimeError, NotImplementedError, OSError, zlib.error) as exc:
                # RuntimeError: encrypted member; NotImplementedError: unknown compression method
                result.errors.append(ReadError(member, f"unreadable member: {exc}", "zip"))
                continue
            result.extend(read(content, info.filename, member, depth + 1, budget))
    return result


def read_gzip(data: bytes, name: str, prefix: str, depth: int, budget: Budget, read: Reader) -> ReadResult:
    """The decompressed stream through ``read``, named after ``name`` without ``.gz`` (``.tgz``: ``.tar``).

    Decompression stops at the ratio or budget limit, and the file is then one ``ReadError``, as is a
    damaged stream. Never raises for bad input.
    """
    base = name.rsplit("/", 1)[-1]
    lower = base.lower()
    inner = base[:-3] if lower.endswith(".gz") else (base[:-4] + ".tar" if lower.endswith(".tgz") else "")
    inner = inner or "decompressed"
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = bytearray()
    try:
        pos = 0
        while pos < len(data) or d.unconsumed_tail:
            if d.unconsumed_tail:
                chunk = d.decompress(d.unconsumed_tail, _CHUNK)
            else:
                chunk = d.decompress(data[pos : pos + _CHUNK], _CHUNK)
                pos += _CHUNK
            out += chunk
            budget.take(len(chunk))
            _check_ratio(len(out), len(data), budget.limits)
            if d.eof:
                break
    except LimitExceeded as exc:
        return ReadResult(errors=[ReadError(prefix, str(exc), "gzip")])
    except zlib.error as exc:
        return ReadResult(errors=[ReadError(prefix, f"bad gzip: {exc}", "gzip")])
    return read(bytes(out), inner, _join(prefix, inner), depth + 1, budget)


def read_tar(data: bytes, name: str, prefix: str, depth: int, budget: Budget, read: Reader) -> ReadResult:
    """Every regular file of a tar archive through ``read`` (links and devices are never followed); a
    damaged archive or a limit hit is a ``ReadError``. Never raises for bad input."""
    result = ReadResult()
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tf:
            return _read_tar_members(tf, prefix, depth, budget, read, result)
    except tarfile.TarError as exc:
        result.errors.append(ReadError(prefix, f"bad tar: {exc}", "tar"))
        return result


def _read_tar_members(tf, prefix: str, depth: int, budget: Budget, read: Reader, result: ReadResult) -> ReadResult:
    for info in tf:
        if not info.isfile():  # links and devices are never followed
            continue
        member = _join(prefix, info.name)
        try:
            budget.count_member()
            stream = tf.extractfile(info)
            content = _read_stream(stream, info.size, budget) if stream else b""
        except LimitExceeded as exc:
            result.errors.append(ReadError(member, str(exc), "tar"))
            break
        except (tarfile.TarError, OSError) as exc:  # a member cut short by a truncated archive
            result.errors.append(ReadError(member, f"unreadable member: {exc}", "tar"))
            continue
        result.extend(read(content, info.name, member, depth + 1, budget))
    return result
