"""Reading a pack's files from a directory, a .tar.gz or a .zip, safely.

A pack comes from people the organization does not control, so reading it must not write outside
a folder, follow a link, or fill the memory: only regular files are read (links, devices and
encrypted entries are refused), every path is one clean relative POSIX path (no `/` at the start,
no `..`, no backslash, UTF-8 without NUL, each path once), and the limits (MAX_PACK_BYTES
uncompressed, MAX_PACK_FILES files) are checked against each entry's size before its bytes are
inflated, with the gzip stream itself capped, so a bomb stops at its first oversized entry.
Nothing is written to disk: a pack is a mapping of paths to bytes (contents.PackFiles).

`tar czf mypack.tgz mypack/` wraps everything in one folder; when pack.yaml is inside that folder
it is stripped, so the archive reads like the directory.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
import zipfile
import zlib
from pathlib import Path

from django.utils.translation import gettext as _

from agents_app.packs.contents import MANIFEST, PackError, PackFiles

MAX_PACK_BYTES = 5 * 1024 * 1024  # a whole pack, uncompressed
MAX_PACK_FILES = 500
# Entries an archive may hold, folders included; past it, it is not a pack.
MAX_ENTRIES = 2 * MAX_PACK_FILES
# What tar adds around the data of MAX_ENTRIES entries: headers, long-name and pax records, padding.
_TAR_OVERHEAD = (MAX_ENTRIES + 20) * 3 * 512
_CHUNK = 64 * 1024
# Version-control folders beside an author's pack are not part of it.
SKIPPED_NAMES = frozenset({".git"})
_GZIP_MAGIC = b"\x1f\x8b"
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
_ZIP_UTF8_FLAG = 0x800
_ZIP_ENCRYPTED_FLAG = 0x1


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):g}"


def clean_path(name: str) -> str:
    """`name` as a pack path (`./` and doubled slashes dropped), or PackError saying what is
    wrong with it: absolute, `..`, a backslash, NUL, not UTF-8, empty."""
    if not isinstance(name, str) or not name:
        raise PackError(_("an entry has no file name: %(entry)s") % {"entry": repr(name)})
    if "\x00" in name:
        raise PackError(_("%(entry)s: file names must not contain NUL characters") % {"entry": repr(name)})
    if "\\" in name:
        raise PackError(
            _("%(entry)s: file names must not contain backslashes (use / between folders)")
            % {"entry": repr(name)}
        )
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise PackError(_("%(entry)s: the file name is not UTF-8") % {"entry": repr(name)}) from None
    if name.startswith("/"):
        raise PackError(
            _("%(entry)s: absolute paths are not allowed; paths are relative to the pack") % {"entry": name}
        )
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise PackError(_("%(entry)s: '..' in a path is not allowed") % {"entry": name})
    if not parts:
        raise PackError(_("an entry has no file name: %(entry)s") % {"entry": repr(name)})
    return "/".join(parts)


class _Collector:
    """The files read so far, refusing the one that would break a rule before its bytes are read."""

    def __init__(self, where: str):
        self.where = where
        self.files: dict[str, bytes] = {}
        self.total = 0
        self.entries = 0

    def entry(self) -> None:
        self.entries += 1
        if self.entries > MAX_ENTRIES:
            raise PackError(
                _("%(where)s has more than %(limit)s entries; a pack holds at most %(files)s files")
                % {"where": self.where, "limit": MAX_ENTRIES, "files": MAX_PACK_FILES}
            )

    def reserve(self, path: str, size: int) -> None:
        if path in self.files:
            raise PackError(_("%(entry)s appears twice in %(where)s") % {"entry": path, "where": self.where})
        if len(self.files) >= MAX_PACK_FILES:
            raise PackError(
                _("%(where)s has more than %(limit)s files (at %(entry)s)")
                % {"where": self.where, "limit": MAX_PACK_FILES, "entry": path}
            )
        if size < 0 or self.total + size > MAX_PACK_BYTES:
            raise PackError(
                _(
                    "%(entry)s (%(size)s bytes) takes %(where)s past the %(limit)s MB a pack may "
                    "hold uncompressed"
                )
                % {"entry": path, "size": size, "where": self.where, "limit": _megabytes(MAX_PACK_BYTES)}
            )
        self.total += size

    def add(self, path: str, data: bytes) -> None:
        self.files[path] = data

    def result(self) -> dict[str, bytes]:
        return _unwrap(self.files)


def _unwrap(files: dict[str, bytes]) -> dict[str, bytes]:
    """Strip the one folder wrapping every file when pack.yaml is inside it."""
    if not files or MANIFEST in files or not all("/" in path for path in files):
        return files
    tops = {path.split("/", 1)[0] for path in files}
    if len(tops) != 1:
        return files
    top = tops.pop()
    if f"{top}/{MANIFEST}" not in files:
        return files
    return {path[len(top) + 1 :]: data for path, data in files.items()}


# ---------------------------------------------------------------------------------------------
# Archives


def read_archive(data: bytes, filename: str = "") -> PackFiles:
    """The files of a .tar.gz / .tgz / .zip pack (type from the bytes, `filename` for messages)."""
    where = filename or _("the archive")
    if data[:2] == _GZIP_MAGIC:
        return _read_tar(data, where)
    if data[:4] in _ZIP_MAGICS:
        return _read_zip(data, where)
    raise PackError(_("%(where)s is not a .tar.gz or .zip archive") % {"where": where})


class _CappedGunzip:
    """A gzip stream inflated as tarfile reads it, never past `limit` bytes: tar headers (pax
    records, long names) are read whole before any size check could see them."""

    def __init__(self, data: bytes, limit: int, where: str):
        self._data = memoryview(data)
        self._position = 0
        self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._buffer = bytearray()
        self._inflated = 0
        self._limit = limit
        self._where = where

    def _more(self) -> bool:
        inflater = self._inflater
        if inflater.eof:
            return False
        source = inflater.unconsumed_tail
        if not source:
            if self._position >= len(self._data):
                return False
            source = self._data[self._position : self._position + _CHUNK]
            self._position += len(source)
        out = inflater.decompress(source, _CHUNK)
        self._inflated += len(out)
        if self._inflated > self._limit:
            raise PackError(
                _("%(where)s unpacks to more than the %(limit)s MB a pack may hold")
                % {"where": self._where, "limit": _megabytes(MAX_PACK_BYTES)}
            )
        self._buffer += out
        return True

    def read(self, size: int = -1) -> bytes:
        while (size < 0 or len(self._buffer) < size) and self._more():
            pass
        size = len(self._buffer) if size < 0 else size
        out = bytes(self._buffer[:size])
        del self._buffer[:size]
        return out

    def close(self) -> None:
        self._buffer.clear()


def _damaged(where: str, error: BaseException) -> PackError:
    return PackError(_("%(where)s is damaged or truncated (%(error)s)") % {"where": where, "error": error})


def _read_tar(data: bytes, where: str) -> dict[str, bytes]:
    collector = _Collector(where)
    stream = _CappedGunzip(data, MAX_PACK_BYTES + _TAR_OVERHEAD, where)
    try:
        with tarfile.open(fileobj=stream, mode="r|", encoding="utf-8", errors="surrogateescape") as tar:
            for member in tar:
                _read_tar_member(tar, member, collector)
    except (tarfile.TarError, EOFError, zlib.error, OSError, ValueError) as error:
        raise _damaged(where, error) from None
    return collector.result()


def _read_tar_member(tar: tarfile.TarFile, member: tarfile.TarInfo, collector: _Collector) -> None:
    collector.entry()
    if member.isdir():
        return
    name = member.name
    if member.issym() or member.islnk():
        raise PackError(_("%(entry)s is a link: a pack holds regular files only") % {"entry": repr(name)})
    if not member.isfile():
        raise PackError(
            _("%(entry)s is a device or special file: a pack holds regular files only")
            % {"entry": repr(name)}
        )
    path = clean_path(name)
    collector.reserve(path, member.size)  # before a byte of it is inflated
    extracted = tar.extractfile(member)
    content = extracted.read() if extracted is not None else b""
    if len(content) != member.size:
        raise PackError(_("%(entry)s is truncated") % {"entry": path})
    collector.add(path, content)


def _zip_name(info: zipfile.ZipInfo) -> str:
    """The entry's name as UTF-8: zipfile reads names without the UTF-8 flag as cp437, while
    Info-ZIP on Linux stores UTF-8 without setting it."""
    name = info.filename
    if info.flag_bits & _ZIP_UTF8_FLAG or name.isascii():
        return name
    try:
        return name.encode("cp437").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        raise PackError(_("%(entry)s: the file name is not UTF-8") % {"entry": repr(name)}) from None


def _read_zip(data: bytes, where: str) -> dict[str, bytes]:
    collector = _Collector(where)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                _read_zip_member(archive, info, collector)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error, OSError) as error:
        raise _damaged(where, error) from None
    except (NotImplementedError, RuntimeError) as error:  # an unknown compression method
        raise PackError(
            _("%(where)s uses a compression method Ongrid cannot read (%(error)s)")
            % {"where": where, "error": error}
        ) from None
    return collector.result()


def _read_zip_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, collector: _Collector) -> None:
    collector.entry()
    mode = info.external_attr >> 16
    if info.is_dir() or stat.S_ISDIR(mode):
        return
    name = _zip_name(info)
    if stat.S_ISLNK(mode):
        raise PackError(_("%(entry)s is a link: a pack holds regular files only") % {"entry": repr(name)})
    if stat.S_IFMT(mode) and not stat.S_ISREG(mode):
        raise PackError(
            _("%(entry)s is a device or special file: a pack holds regular files only")
            % {"entry": repr(name)}
        )
    if info.flag_bits & _ZIP_ENCRYPTED_FLAG:
        raise PackError(_("%(entry)s is encrypted: a pack is not") % {"entry": repr(name)})
    path = clean_path(name)
    collector.reserve(path, info.file_size)  # before a byte of it is inflated
    with archive.open(info) as member:
        content = member.read()  # zipfile stops at the declared size, and checks the CRC
    collector.add(path, content)


# ---------------------------------------------------------------------------------------------
# Directories


def _walk_error(error: OSError) -> None:
    raise PackError(
        _("%(path)s cannot be read (%(error)s)") % {"path": error.filename, "error": error.strerror}
    )


def read_directory(root: Path) -> PackFiles:
    """The files of a pack directory (symlinks refused; a `.git` folder is not part of the pack)."""
    root = Path(root)
    if not root.is_dir():
        raise PackError(_("%(path)s is not a directory") % {"path": root})
    collector = _Collector(str(root))
    for folder, folders, names in os.walk(root, onerror=_walk_error):
        base = Path(folder)
        folders[:] = sorted(name for name in folders if name not in SKIPPED_NAMES)
        for name in folders:
            if (base / name).is_symlink():
                raise PackError(
                    _("%(entry)s is a link: a pack holds regular files only")
                    % {"entry": (base / name).relative_to(root).as_posix()}
                )
        for name in sorted(names):
            if name not in SKIPPED_NAMES:
                _read_file(root, base / name, collector)
    return collector.result()


def _read_file(root: Path, path: Path, collector: _Collector) -> None:
    relative = clean_path(path.relative_to(root).as_posix())
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        raise PackError(_("%(entry)s is a link: a pack holds regular files only") % {"entry": relative})
    if not stat.S_ISREG(info.st_mode):
        raise PackError(
            _("%(entry)s is a device or special file: a pack holds regular files only") % {"entry": relative}
        )
    collector.reserve(relative, info.st_size)
    try:
        with path.open("rb") as handle:
            content = handle.read(info.st_size + 1)
    except OSError as error:
        raise PackError(
            _("%(path)s cannot be read (%(error)s)") % {"path": relative, "error": error.strerror}
        ) from None
    if len(content) != info.st_size:
        raise PackError(_("%(entry)s changed while it was read") % {"entry": relative})
    collector.add(relative, content)


# ---------------------------------------------------------------------------------------------
# Writing


def build_archive(files: PackFiles) -> bytes:
    """A deterministic .tar.gz of `files` (sorted, fixed mtime/owner): the same files give the
    same bytes, so a stored release's SHA-256 identifies it."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as compressed:
        with tarfile.open(fileobj=compressed, mode="w", format=tarfile.PAX_FORMAT, encoding="utf-8") as tar:
            for path in sorted(files):
                if clean_path(path) != path:
                    raise PackError(_("%(entry)s is not a clean relative path") % {"entry": repr(path)})
                content = files[path]
                info = tarfile.TarInfo(path)
                info.size = len(content)
                info.mtime = 0
                info.mode = 0o644
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.type = tarfile.REGTYPE
                tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()
